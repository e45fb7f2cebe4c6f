// Organization settings (DESIGN §5, §9; ADMIN, live): name, sending pause, tracking defaults,
// per-key rate limit, daily cap, alert rules. Pause and rate limit are read by every web process
// from its auth cache, so a change drops the org's cached contexts everywhere at once.
import {
  getOrg,
  getOrgForUpdate,
  updateOrgSettings,
  type OrgRow,
  type OrgSettingsPatch,
} from '../../shared/db/orgs.js';
import { notFound, validationError } from '../../shared/errors.js';
import { fireOrgEvent } from '../../shared/org-events.js';
import { type UpdateOrganizationBody } from '../schemas/organization.js';
import type { Handlers } from '../types.js';
import { routeBody } from '../route-schemas.js';

export function renderOrganization(o: OrgRow) {
  return {
    object: 'organization',
    id: o.id,
    name: o.name,
    sending_paused: o.sending_paused,
    sending_paused_reason: o.sending_paused_reason,
    tracking: { opens: o.track_opens, clicks: o.track_clicks },
    rate_limit: { requests_per_second: o.rate_limit_per_second, burst: o.rate_limit_burst },
    daily_cap: o.daily_cap,
    alert_rules: o.alert_rules,
    retention: {
      content_days: o.retention_content_days,
      events_days: o.retention_events_days,
      request_log_days: o.retention_request_log_days,
    },
    created_at: o.created_at.toISOString(),
    updated_at: o.updated_at.toISOString(),
  };
}

/**
 * The pause columns after the change. Pausing takes an optional reason (a pause without one
 * keeps the current reason when already paused); resuming clears it; a reason alone edits the
 * reason of a current pause.
 */
function pauseColumns(current: OrgRow, body: UpdateOrganizationBody): OrgSettingsPatch {
  const reason = body.sending_paused_reason;
  if (body.sending_paused === false) {
    if (typeof reason === 'string') {
      throw validationError('body.sending_paused_reason can only be given while pausing (sending_paused: true)');
    }
    return { sending_paused: false, sending_paused_reason: null };
  }
  if (body.sending_paused === true) {
    const kept = current.sending_paused ? current.sending_paused_reason : null;
    return { sending_paused: true, sending_paused_reason: reason === undefined ? kept : reason };
  }
  if (reason === undefined) return {};
  if (!current.sending_paused && reason !== null) {
    throw validationError('body.sending_paused_reason needs sending_paused: true (sending is not paused)');
  }
  return { sending_paused_reason: reason };
}

function toColumns(current: OrgRow, body: UpdateOrganizationBody): OrgSettingsPatch {
  return {
    name: body.name,
    ...pauseColumns(current, body),
    track_opens: body.tracking?.opens,
    track_clicks: body.tracking?.clicks,
    rate_limit_per_second: body.rate_limit?.requests_per_second,
    rate_limit_burst: body.rate_limit?.burst,
    daily_cap: body.daily_cap,
    alert_rules: body.alert_rules,
    retention_content_days: body.retention?.content_days,
    retention_events_days: body.retention?.events_days,
    retention_request_log_days: body.retention?.request_log_days,
  };
}

export const organizationHandlers: Handlers = {
  'GET /organization': async (ctx) => {
    const org = await getOrg(ctx.deps.sql, ctx.state.auth.org.id);
    if (!org) throw notFound('Organization');
    ctx.body = renderOrganization(org);
  },

  'PATCH /organization': async (ctx) => {
    const auth = ctx.state.auth;
    const body = routeBody<UpdateOrganizationBody>(ctx);
    const { before, after } = await ctx.deps.sql.begin(async (tx) => {
      const current = await getOrgForUpdate(tx, auth.org.id);
      if (!current) throw notFound('Organization');
      return { before: current, after: await updateOrgSettings(tx, current.id, toColumns(current, body)) };
    });
    if (!after) throw notFound('Organization');
    await ctx.deps.auth.invalidateOrg(auth.org.id);
    if (before.sending_paused !== after.sending_paused) {
      const paused = after.sending_paused;
      ctx.state.audit = { action: paused ? 'organization.paused' : 'organization.resumed' };
      await fireOrgEvent(ctx.deps, {
        orgId: after.id,
        type: paused ? 'organization.paused' : 'organization.resumed',
        data: {
          ...(paused ? { reason: after.sending_paused_reason } : {}),
          by: { type: 'key', id: auth.key.id },
        },
      });
      ctx.state.log.info(
        {
          event: after.sending_paused ? 'ORG_SENDING_PAUSED' : 'ORG_SENDING_RESUMED',
          orgId: after.id,
          keyId: auth.key.id,
          reason: after.sending_paused_reason,
        },
        after.sending_paused ? 'sending paused by an admin' : 'sending resumed by an admin',
      );
    }
    ctx.body = renderOrganization(after);
  },
};
