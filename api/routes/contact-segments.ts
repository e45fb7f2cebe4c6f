// A contact's segments, as Resend's SDK manages them (contacts.segments.add/list/remove, DESIGN
// §21): adding a contact to a segment makes it a member whatever the filter says; removing it
// keeps it out, likewise (segment_members, as automations' segment steps). A segment created
// without a filter selects nobody by itself: a static segment, the sum of the contacts added to
// it. A broadcast to either kind reaches its members. Closed to domain-restricted keys, as a
// contact's subscriptions are: both decide what the contact receives.
import type { AuthContext } from '../../shared/auth.js';
import { listSegments, segmentsHolding, setSegmentMember } from '../../shared/db/segments.js';
import type { SegmentListQuery } from '../schemas/segments.js';
import type { ApiContext, Handlers } from '../types.js';
import { listEnvelope } from '../validate.js';
import { contactOr404 } from './contacts-render.js';
import { renderSegment, segmentOr404 } from './segments.js';
import { routeQuery } from '../route-schemas.js';

async function setMembership(ctx: ApiContext & { state: { auth: AuthContext } }, included: boolean) {
  const { sql } = ctx.deps;
  const auth = ctx.state.auth;
  const contact = await contactOr404(sql, auth, ctx.params.id!);
  const segment = await segmentOr404(sql, auth, ctx.params.segment_id!);
  await setSegmentMember(sql, segment.id, contact.id, included);
  return { object: 'segment_membership', id: segment.id, segment_id: segment.id, contact_id: contact.id };
}

export const contactSegmentHandlers: Handlers = {
  'POST /contacts/:id/segments/:segment_id': async (ctx) => {
    ctx.status = 201;
    ctx.body = await setMembership(ctx, true);
  },

  'DELETE /contacts/:id/segments/:segment_id': async (ctx) => {
    ctx.body = { ...(await setMembership(ctx, false)), deleted: true };
  },

  'GET /contacts/:id/segments': async (ctx) => {
    const { sql } = ctx.deps;
    const auth = ctx.state.auth;
    const q = routeQuery<SegmentListQuery>(ctx);
    const contact = await contactOr404(sql, auth, ctx.params.id!);
    // A page of the organization's segments, of which those holding the contact: a page may be
    // shorter than `limit` while `has_more` says that more segments follow.
    const page = await listSegments(sql, auth.org.id, q);
    const more = page.length > q.limit;
    const held = await segmentsHolding(sql, auth.org.id, contact.id, page.slice(0, q.limit));
    ctx.body = { ...listEnvelope(held, held.length, renderSegment), has_more: more };
  },
};
