// Optional HTTP intake for installs whose MX is elsewhere: POST /api/v1/inbound/raw with a
// message/rfc822 body, authenticated by the install's INBOUND_SECRET (not an API key). The
// message is routed by its envelope recipients (X-Tern-Rcpt-To header, comma-separated, else
// the To/Cc headers) exactly as the MX routes RCPT TO, stored, and enqueued for the same worker.
import { isIP } from 'node:net';
import type Koa from 'koa';
import { insertInbound } from '../../shared/db/inbound.js';
import { ApiError } from '../../shared/errors.js';
import { enqueueInbound } from '../../shared/inbound-jobs.js';
import { sameSecret } from '../../shared/same-secret.js';
import { routeRecipient } from '../../shared/inbound-routing.js';
import { mediaType, readRaw } from '../middleware/body.js';
import type { ApiCustom, ApiState } from '../types.js';

export const INTAKE_PATH = '/api/v1/inbound/raw';

function recipientsOf(ctx: Koa.ParameterizedContext<ApiState, ApiCustom>, raw: Buffer): string[] {
  const given = ctx.get('x-tern-rcpt-to');
  if (given)
    return given
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  const head = raw.toString('latin1').split(/\r?\n\r?\n/, 1)[0] ?? '';
  const unfolded = head.replace(/\r?\n[ \t]+/g, ' ');
  const out: string[] = [];
  for (const line of unfolded.split(/\r?\n/)) {
    if (!/^(to|cc)\s*:/i.test(line)) continue;
    for (const m of line.matchAll(/[A-Za-z0-9._%+'=-]+@[A-Za-z0-9.-]+/g)) out.push(m[0]);
  }
  return out;
}

function clientIp(ctx: Koa.ParameterizedContext<ApiState, ApiCustom>): string | null {
  const given = ctx.get('x-tern-client-ip').trim();
  return given && isIP(given) ? given : null;
}

/** The handler of POST INTAKE_PATH (routed by api/dispatch.ts). */
export function inboundIntake(): Koa.Middleware<ApiState, ApiCustom> {
  return async (ctx) => {
    const { config, sql, queues, logger } = ctx.deps;
    const m = /^Bearer +(\S+)$/i.exec(ctx.get('authorization'));
    if (!config.inboundSecret || !m || !sameSecret(m[1]!, config.inboundSecret)) {
      throw new ApiError(
        'unauthorized',
        config.inboundSecret
          ? 'Invalid inbound secret'
          : 'The HTTP inbound intake is disabled (INBOUND_SECRET is not set)',
      );
    }
    if (mediaType(ctx) !== 'message/rfc822') {
      throw new ApiError('unsupported_media_type', 'Body must be message/rfc822');
    }
    const raw = await readRaw(ctx.req, config.inboundMaxBytes);
    if (raw.length === 0) throw new ApiError('validation_error', 'Empty message');
    const byOrg = new Map<string, { orgId: string; domainId: string; rcpts: string[] }>();
    for (const rcpt of recipientsOf(ctx, raw)) {
      const route = await routeRecipient({ config, sql, logger }, rcpt);
      if (!route) continue;
      const entry = byOrg.get(route.orgId) ?? { orgId: route.orgId, domainId: route.domainId, rcpts: [] };
      entry.rcpts.push(rcpt);
      byOrg.set(route.orgId, entry);
    }
    if (byOrg.size === 0) {
      throw new ApiError('validation_error', 'No recipient is reply.<verified domain> or a VERP bounce address');
    }
    const ids = await sql.begin(async (tx) => {
      const out: string[] = [];
      for (const e of byOrg.values()) {
        out.push(
          await insertInbound(tx, {
            orgId: e.orgId,
            domainId: e.domainId,
            source: 'http',
            mailFrom: ctx.get('x-tern-mail-from') || null,
            rcptTo: e.rcpts,
            // The sending client's address and EHLO name, when the MX in front passes them on:
            // what SPF is checked against (the intake's own caller is not the sender).
            remoteAddress: clientIp(ctx),
            helo: ctx.get('x-tern-helo') || null,
            raw,
          }),
        );
      }
      return out;
    });
    await enqueueInbound({ queues, logger }, ids);
    ctx.status = 202;
    ctx.body = { object: 'list', data: ids.map((id) => ({ id })) };
  };
}
