// POST /emails/batch: up to 100 messages in one transaction and one bulk enqueue. Validation
// follows Resend: `x-batch-validation: strict` (default) refuses the whole batch when one item is
// invalid, naming its index; `permissive` stores the valid items and lists the others in `errors`.
import { ApiError } from '../../shared/errors.js';
import { batchBodySchema, batchItemSchema, type SendEmailBody } from '../schemas/emails.js';
import type { Handler } from '../types.js';
import { bodyValidator } from '../validate.js';
import { precheck, prepareEmail, type PreparedEmail } from './emails-input.js';
import { storeAndEnqueue } from './emails-send.js';
import { resolveForSend } from './emails-template.js';

const validateBatch = bodyValidator<unknown[]>(batchBodySchema);
const validateItem = bodyValidator<SendEmailBody>(batchItemSchema);

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
  const items = validateBatch(ctx.state.body);
  const now = Date.now();
  const prepared: PreparedEmail[] = [];
  const errors: { index: number; message: string }[] = [];
  for (const [index, raw] of items.entries()) {
    try {
      const body = validateItem(raw);
      precheck('body', body);
      const template = await resolveForSend(ctx.deps.sql, auth, body);
      prepared.push(prepareEmail('body', body, { auth, now, template }));
    } catch (err) {
      if (!(err instanceof ApiError) || err.status >= 500) throw err;
      const labelled = atIndex(err, index);
      if (validation === 'strict') throw labelled;
      errors.push({ index, message: labelled.message });
    }
  }
  await storeAndEnqueue({ ...ctx.deps, logger: ctx.state.log }, prepared);
  const data = prepared.map((p) => ({ id: p.email.id }));
  ctx.body = validation === 'permissive' ? { data, errors } : { data };
};
