// Segments (DESIGN §5; management: ADMIN, live keys): a name and a filter over contacts. The
// filter is checked by ajv (shape, depth), then for meaning (op against field and value, topics
// of the org), and compiled to SQL whenever the segment's contacts are read, so a segment always
// reflects the contacts and topic defaults as they are now.
import type { AuthContext } from '../../shared/auth.js';
import type { Db } from '../../shared/db/pool.js';
import {
  deleteSegment,
  findSegment,
  insertSegment,
  listSegmentContacts,
  listSegments,
  updateSegment,
  type SegmentRow,
} from '../../shared/db/segments.js';
import { findTopics } from '../../shared/db/topics.js';
import { notFound, validationError } from '../../shared/errors.js';
import { checkFilter, topicPath, type SegmentFilter } from '../../shared/segment-filter.js';
import { type CreateSegmentBody, type PatchSegmentBody, type SegmentListQuery } from '../schemas/segments.js';
import type { Handlers } from '../types.js';
import { listEnvelope } from '../validate.js';
import { renderContact } from './contacts-render.js';
import { routeBody, routeQuery } from '../route-schemas.js';

export function renderSegment(s: SegmentRow) {
  return {
    object: 'segment',
    id: s.id,
    name: s.name,
    filter: s.filter,
    created_at: s.created_at.toISOString(),
  };
}

/**
 * Refuses (422) a reference to a topic that is not one of the organization's; `named` maps each
 * topic id to where the body names it. Segments and automation conditions share it.
 */
export async function checkOwnTopics(db: Db, orgId: string, named: ReadonlyMap<string, string>): Promise<void> {
  const known = new Set((await findTopics(db, orgId, [...named.keys()])).map((t) => t.id));
  for (const [id, at] of named) {
    if (!known.has(id)) throw validationError(`${at}: "${id}" is not a topic of this organization`);
  }
}

/** Meaning checks beyond the schema; every topic the filter names must be one of the org's. */
async function checkSegmentFilter(db: Db, auth: AuthContext, filter: SegmentFilter): Promise<void> {
  const named = checkFilter(filter);
  await checkOwnTopics(db, auth.org.id, new Map(named.map((id) => [id, topicPath(filter, id) ?? 'body.filter'])));
}

export async function segmentOr404(db: Db, auth: AuthContext, id: string): Promise<SegmentRow> {
  const segment = await findSegment(db, auth.org.id, id);
  if (!segment) throw notFound('Segment');
  return segment;
}

export const segmentHandlers: Handlers = {
  'POST /segments': async (ctx) => {
    const auth = ctx.state.auth;
    const body = routeBody<CreateSegmentBody>(ctx);
    await checkSegmentFilter(ctx.deps.sql, auth, body.filter);
    const segment = await insertSegment(ctx.deps.sql, { orgId: auth.org.id, name: body.name, filter: body.filter });
    ctx.status = 201;
    ctx.body = renderSegment(segment);
  },

  'GET /segments': async (ctx) => {
    const q = routeQuery<SegmentListQuery>(ctx);
    const rows = await listSegments(ctx.deps.sql, ctx.state.auth.org.id, q);
    ctx.body = listEnvelope(rows, q.limit, renderSegment);
  },

  'GET /segments/:id': async (ctx) => {
    ctx.body = renderSegment(await segmentOr404(ctx.deps.sql, ctx.state.auth, ctx.params.id!));
  },

  'PATCH /segments/:id': async (ctx) => {
    const auth = ctx.state.auth;
    const body = routeBody<PatchSegmentBody>(ctx);
    if (body.filter !== undefined) await checkSegmentFilter(ctx.deps.sql, auth, body.filter);
    const segment = await updateSegment(ctx.deps.sql, auth.org.id, ctx.params.id!, body);
    if (!segment) throw notFound('Segment');
    ctx.body = renderSegment(segment);
  },

  'DELETE /segments/:id': async (ctx) => {
    const segment = await deleteSegment(ctx.deps.sql, ctx.state.auth.org.id, ctx.params.id!);
    if (!segment) throw notFound('Segment');
    ctx.body = { object: 'segment', id: segment.id, deleted: true };
  },

  'GET /segments/:id/contacts': async (ctx) => {
    const auth = ctx.state.auth;
    const q = routeQuery<SegmentListQuery>(ctx);
    const segment = await segmentOr404(ctx.deps.sql, auth, ctx.params.id!);
    const rows = await listSegmentContacts(ctx.deps.sql, auth.org.id, segment, q);
    ctx.body = listEnvelope(rows, q.limit, renderContact);
  },
};
