// POST /emails/batch: up to 100 messages in one transaction and one bulk enqueue. Validation
// follows Resend: `x-batch-validation: strict` (default) refuses the whole batch when one item is
// invalid, naming its index; `permissive` stores the valid items and lists the others in `errors`.
import { ApiError, OutcomeUnknown } from '../../shared/errors.js';
import { BATCH_ITEM, type SendEmailBody } from '../schemas/emails.js';
import type { Handler } from '../types.js';
import { precheck, prepareEmail, type PreparedEmail } from '../mail/emails-input.js';
import { outcomeUnknown, storeAndEnqueue } from '../mail/emails-send.js';
import { resolveForSend } from './emails-template.js';
import { checkTopic, sendTopics } from './emails-topics.js';
import { routeBody, routeBodyItem } from '../route-schemas.js';

function mode(header: string): 'strict' | 'permissive' {
  const value = header.trim().toLowerCase();
  if (value === '' || value === 'strict') return 'strict';
  if (value === 'permissive') return 'permissive';
  throw new ApiError('validation_error', 'header x-batch-validation must be strict or permissive');
}

/** Re-labels an item's error so that it names its index: `body.to` → `body[3].to`. */
function atIndex(err: ApiError, index: number): ApiError {
  const message = err.message.startsWith('body')
    ? `body[${index}]${err.message.slice(4)}`
    : `body[${index}]: ${err.message}`;
  return new ApiError(err.code, message, err.headers);
}

export const batchHandler: Handler = async (ctx) => {
  const auth = ctx.state.auth;
  const validation = mode(ctx.get('x-batch-validation'));
  const items = routeBody<unknown[]>(ctx);
  const now = Date.now();
  const topics = await sendTopics(ctx.deps.sql, auth, items);
  const prepared: PreparedEmail[] = [];
  // Each item's id by index (null: refused), which a retry after 504 outcome_unknown reuses.
  const ids: (string | null)[] = items.map(() => null);
  const errors: { index: number; message: string }[] = [];
  for (const [index, raw] of items.entries()) {
    try {
      const body = routeBodyItem<SendEmailBody>(ctx, raw);
      precheck('body', body);
      checkTopic('body', body.topic_id, topics);
      const template = await resolveForSend(ctx.deps.sql, auth, body);
      const id = ctx.state.retryIds?.[index];
      const p = prepareEmail('body', body, { auth, now, template, id, attachmentBytes: BATCH_ITEM.attachmentBytes });
      prepared.push(p);
      ids[index] = p.email.id;
    } catch (err) {
      if (!(err instanceof ApiError) || err.status >= 500) throw err;
      const labelled = atIndex(err, index);
      if (validation === 'strict') throw labelled;
      errors.push({ index, message: labelled.message });
    }
  }
  await storeAndEnqueue({ ...ctx.deps, logger: ctx.state.log }, 'batch', prepared).catch((err: unknown) => {
    throw err instanceof OutcomeUnknown ? outcomeUnknown(ids, err.cause) : err;
  });
  const data = prepared.map((p) => ({ id: p.email.id }));
  ctx.body = validation === 'permissive' ? { data, errors } : { data };
};
