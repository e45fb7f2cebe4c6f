// Received messages (DESIGN §5 Inbound, §16): list and read what the MX received on
// reply.<domain> and on the routes of domains with inbound enabled, and download an attachment.
// A domain-restricted key sees only its domains' messages.
import { isRestricted, type AuthContext } from '../../shared/auth.js';
import {
  getInbound,
  inboundAttachmentContent,
  inboundAttachments,
  listInbound,
  type InboundAttachmentRow,
  type InboundRow,
} from '../../shared/db/inbound.js';
import { notFound } from '../../shared/errors.js';
import type { Handler, Handlers } from '../types.js';
import { listEnvelope, type Pagination } from '../validate.js';
import { routeQuery } from '../route-schemas.js';

function render(row: InboundRow, attachments: InboundAttachmentRow[] | null) {
  return {
    object: 'inbound',
    id: row.id,
    from: row.from_address,
    to: row.to_addresses,
    cc: row.cc_addresses,
    subject: row.subject,
    text: row.text,
    html: row.html,
    stripped_text: row.stripped_text,
    mailbox_hash: row.mailbox_hash,
    auth: row.auth,
    route: row.route,
    forward_email_id: row.forward_email_id,
    headers: row.headers.map((h) => ({ name: h.key, value: h.value })),
    ...(attachments
      ? {
          attachments: attachments.map((a) => ({
            id: a.id,
            filename: a.filename,
            content_type: a.content_type,
            size: a.size,
          })),
        }
      : {}),
    email_id: row.email_id,
    message_id: row.message_id,
    auto_reply: row.auto_reply,
    status: row.status,
    error: row.error,
    created_at: row.created_at.toISOString(),
  };
}

function scope(auth: AuthContext): string[] | null {
  return isRestricted(auth) ? auth.key.domainIds : null;
}

/** The message named by `:id`, if the key may see it (its org; a restricted key, its domains). */
async function visibleInbound(ctx: Parameters<Handler>[0]): Promise<InboundRow> {
  const auth = ctx.state.auth;
  const row = await getInbound(ctx.deps.sql, auth.org.id, ctx.params.id!);
  const allowed = scope(auth);
  if (!row || (allowed && (!row.domain_id || !allowed.includes(row.domain_id)))) throw notFound('Inbound message');
  return row;
}

/** RFC 6266: an ASCII fallback name and the exact one percent-encoded (RFC 8187). */
function contentDisposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}

/** An attachment as listed: its metadata and where its bytes are (an ADMIN key fetches them). */
function renderAttachment(ctx: Parameters<Handler>[0], inboundId: string, a: InboundAttachmentRow) {
  return {
    object: 'attachment',
    id: a.id,
    filename: a.filename,
    content_type: a.content_type,
    content_id: a.content_id,
    size: a.size,
    download_url: `${ctx.deps.config.baseUrl.replace(/\/+$/, '')}/api/v1/inbound/${inboundId}/attachments/${a.id}`,
  };
}

export const inboundHandlers: Handlers = {
  'GET /inbound': async (ctx) => {
    const q = routeQuery<Pagination>(ctx);
    const rows = await listInbound(ctx.deps.sql, ctx.state.auth.org.id, scope(ctx.state.auth), q);
    ctx.body = listEnvelope(rows, q.limit, (r) => render(r, null));
  },

  'GET /inbound/:id': async (ctx) => {
    const row = await visibleInbound(ctx);
    ctx.body = render(row, await inboundAttachments(ctx.deps.sql, row.id));
  },

  'GET /inbound/:id/attachments': async (ctx) => {
    const row = await visibleInbound(ctx);
    const rows = await inboundAttachments(ctx.deps.sql, row.id);
    ctx.body = { object: 'list', has_more: false, data: rows.map((a) => renderAttachment(ctx, row.id, a)) };
  },

  // Resend's emails.receiving.attachments.get: the metadata and the download URL, not the bytes.
  'GET /emails/receiving/:id/attachments/:attachment_id': async (ctx) => {
    const row = await visibleInbound(ctx);
    const a = (await inboundAttachments(ctx.deps.sql, row.id)).find((x) => x.id === ctx.params.attachment_id);
    if (!a) throw notFound('Attachment');
    ctx.body = renderAttachment(ctx, row.id, a);
  },

  'GET /inbound/:id/attachments/:attachment_id': async (ctx) => {
    const row = await visibleInbound(ctx);
    const a = await inboundAttachmentContent(ctx.deps.sql, row.id, ctx.params.attachment_id!);
    if (!a) throw notFound('Attachment');
    // The bytes are the sender's: never rendered on this origin (download only, no sniffing).
    ctx.set('content-type', a.content_type || 'application/octet-stream');
    ctx.set('content-disposition', contentDisposition(a.filename ?? `${a.id}.bin`));
    ctx.set('x-content-type-options', 'nosniff');
    ctx.set('content-security-policy', "default-src 'none'; sandbox");
    ctx.body = a.content;
  },
};
