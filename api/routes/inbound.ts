// Inbound replies (DESIGN §5 Inbound): list and read what the MX received on reply.<domain>.
// A domain-restricted key sees only its domains' messages.
import { isRestricted, type AuthContext } from '../../shared/auth.js';
import { getInbound, inboundAttachments, listInbound, type InboundRow } from '../../shared/db/inbound.js';
import { notFound } from '../../shared/errors.js';
import type { Handlers } from '../types.js';
import { listEnvelope, paginationProperties, queryValidator, type Pagination } from '../validate.js';

const validateList = queryValidator<Pagination>({
  type: 'object',
  additionalProperties: false,
  properties: paginationProperties,
});

function render(
  row: InboundRow,
  attachments: { filename: string | null; content_type: string; size: number }[] | null,
) {
  return {
    object: 'inbound',
    id: row.id,
    from: row.from_address,
    to: row.to_addresses,
    cc: row.cc_addresses,
    subject: row.subject,
    text: row.text,
    html: row.html,
    headers: row.headers.map((h) => ({ name: h.key, value: h.value })),
    ...(attachments
      ? { attachments: attachments.map((a) => ({ filename: a.filename, content_type: a.content_type, size: a.size })) }
      : {}),
    email_id: row.email_id,
    message_id: row.message_id,
    auto_reply: row.auto_reply,
    created_at: row.created_at.toISOString(),
  };
}

function scope(auth: AuthContext): string[] | null {
  return isRestricted(auth) ? auth.key.domainIds : null;
}

export const inboundHandlers: Handlers = {
  'GET /inbound': async (ctx) => {
    const q = validateList(ctx.query);
    const rows = await listInbound(ctx.deps.sql, ctx.state.auth.org.id, scope(ctx.state.auth), q);
    ctx.body = listEnvelope(rows, q.limit, (r) => render(r, null));
  },

  'GET /inbound/:id': async (ctx) => {
    const auth = ctx.state.auth;
    const row = await getInbound(ctx.deps.sql, auth.org.id, ctx.params.id!);
    const allowed = scope(auth);
    if (!row || (allowed && (!row.domain_id || !allowed.includes(row.domain_id)))) throw notFound('Inbound message');
    ctx.body = render(row, await inboundAttachments(ctx.deps.sql, row.id));
  },
};
