// Turns a schema-valid create or PATCH body (merged over the stored draft for PATCH) into a
// broadcast's content, checking what a schema cannot: the from address and its domain (a
// restricted key may only use its own: 403 forbidden_domain), the segment, topic and template
// being the organization's, the html/text vs template rule, reply_to addresses and the schedule.
import type { AuthContext } from '../../shared/auth.js';
import type { BroadcastContent, BroadcastRow } from '../../shared/db/broadcasts.js';
import type { Db } from '../../shared/db/pool.js';
import { findSegment } from '../../shared/db/segments.js';
import { findTemplateVersion } from '../../shared/db/templates.js';
import { findTopic } from '../../shared/db/topics.js';
import { validationError } from '../../shared/errors.js';
import { formatMailbox, parseMailbox } from '../../shared/mail/addresses.js';
import { checkMergeTags } from '../../shared/merge-tags.js';
import type { BroadcastFieldsBody, TemplateInput } from '../schemas/broadcasts.js';
import { fromDomain, parseSchedule } from '../mail/emails-input.js';

export type ResolvedBroadcast = BroadcastContent & { scheduled_at: Date | null };

/** `undefined` keeps the stored value; anything else (null included) replaces it. */
function pick<T>(given: T | undefined, stored: T): T {
  return given === undefined ? stored : given;
}

function replyTo(value: unknown): string[] {
  if (value === null || value === undefined) return [];
  const list = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list) || list.some((v) => typeof v !== 'string')) {
    throw validationError('body.reply_to must be a string or an array of strings');
  }
  if (list.length > 50) throw validationError('body.reply_to must have at most 50 addresses');
  return (list as string[]).map((raw, i) => {
    const r = parseMailbox(raw);
    if (!r.ok) throw validationError(`body.reply_to[${i}] ${JSON.stringify(raw)} ${r.reason}`);
    return formatMailbox(r.mailbox);
  });
}

async function template(db: Db, orgId: string, input: TemplateInput) {
  const ref = typeof input === 'string' ? { id: input } : input;
  const row = await findTemplateVersion(db, orgId, ref.id, ref.version ?? null);
  if (!row) throw validationError(`body.template: template ${ref.id} not found`);
  if (row.version === null) {
    throw validationError(
      row.published_version === null
        ? `body.template: template ${ref.id} has no published version`
        : `body.template.version: template ${ref.id} has no version ${ref.version}`,
    );
  }
  return { id: row.template_id, version: ref.version ?? null, subject: row.subject, from: row.from_address };
}

/** html/text and template exclude each other; a PATCH that sets one side clears the other. */
function content(body: BroadcastFieldsBody, base: BroadcastRow | null) {
  const givesTemplate = body.template !== undefined && body.template !== null;
  const givesBody = (body.html !== undefined && body.html !== null) || (body.text !== undefined && body.text !== null);
  if (givesTemplate && givesBody) throw validationError('body.template cannot be combined with html or text');
  const html = givesTemplate ? null : pick(body.html, base?.html ?? null);
  const text = givesTemplate ? null : pick(body.text, base?.text ?? null);
  const keepsTemplate = !givesBody && body.template === undefined && base?.template_id != null;
  return { html, text, keepsTemplate };
}

async function checkRefs(db: Db, auth: AuthContext, segmentId: string | null, topicId: string | null) {
  if (segmentId === null) throw validationError('body.segment_id is required');
  if (!(await findSegment(db, auth.org.id, segmentId))) {
    throw validationError(`body.segment_id: "${segmentId}" is not a segment of this organization`);
  }
  if (topicId !== null && !(await findTopic(db, auth.org.id, topicId))) {
    throw validationError(`body.topic_id: "${topicId}" is not a topic of this organization`);
  }
}

/** The checked content of a new broadcast (base null) or of a draft after a PATCH. */
export async function resolveBroadcast(
  db: Db,
  auth: AuthContext,
  body: BroadcastFieldsBody,
  base: BroadcastRow | null,
  now: number,
): Promise<ResolvedBroadcast> {
  const { html, text, keepsTemplate } = content(body, base);
  const tpl = body.template ? await template(db, auth.org.id, body.template) : null;
  if (html === null && text === null && !tpl && !keepsTemplate) {
    throw validationError('body.html or body.text is required (or a template)');
  }
  const fromRaw = body.from ?? base?.from_address ?? tpl?.from ?? null;
  if (!fromRaw) throw validationError('body.from is required');
  const parsed = parseMailbox(fromRaw);
  if (!parsed.ok) throw validationError(`body.from ${JSON.stringify(fromRaw)} ${parsed.reason}`);
  const domain = fromDomain('body.from', auth, parsed.mailbox);
  const subject = pick(body.subject, base?.subject ?? null);
  if (subject === null && !(tpl?.subject ?? (keepsTemplate ? 'stored' : null))) {
    throw validationError('body.subject is required (the template has none)');
  }
  const previewText = pick(body.preview_text, base?.preview_text ?? null);
  // A `{{` that is not a merge tag would go out as written: refused here instead.
  for (const [field, source] of [
    ['subject', subject],
    ['html', html],
    ['text', text],
    ['preview_text', previewText],
  ] as const) {
    checkMergeTags(source, `body.${field}`);
  }
  const segmentId = body.segment_id ?? body.audience_id ?? base?.segment_id ?? null;
  const topicId = pick(body.topic_id, base?.topic_id ?? null);
  await checkRefs(db, auth, segmentId, topicId);
  return {
    name: pick(body.name, base?.name ?? null),
    domain_id: domain.id,
    from_address: formatMailbox(parsed.mailbox),
    subject,
    reply_to: body.reply_to === undefined ? (base?.reply_to ?? []) : replyTo(body.reply_to),
    preview_text: previewText,
    html,
    text,
    template_id: tpl ? tpl.id : keepsTemplate ? base!.template_id : null,
    template_version: tpl ? tpl.version : keepsTemplate ? base!.template_version : null,
    segment_id: segmentId,
    topic_id: topicId,
    kind: pick(body.kind, base?.kind ?? null),
    scheduled_at:
      body.scheduled_at === undefined
        ? (base?.scheduled_at ?? null)
        : body.scheduled_at === null
          ? null
          : parseSchedule('body.scheduled_at', body.scheduled_at, now),
  };
}
