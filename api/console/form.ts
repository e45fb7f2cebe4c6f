// Form bodies of the console's POSTs (application/x-www-form-urlencoded, a few KiB at most).
import { ApiError, validationError } from '../../shared/errors.js';
import { readRaw } from '../middleware/body.js';
import type { ApiContext } from '../types.js';

const FORM_LIMIT = 16 * 1024;

export async function readForm(ctx: ApiContext): Promise<URLSearchParams> {
  if (ctx.method !== 'POST') return new URLSearchParams();
  const hasBody = Boolean(ctx.request.length) || Boolean(ctx.get('transfer-encoding'));
  if (hasBody && ctx.request.type !== 'application/x-www-form-urlencoded') {
    throw new ApiError('unsupported_media_type', 'Console forms are sent as application/x-www-form-urlencoded');
  }
  const raw = hasBody ? await readRaw(ctx.req as never, FORM_LIMIT) : Buffer.alloc(0);
  return new URLSearchParams(raw.toString('utf8'));
}

/** A required text field, trimmed, within a length range. */
export function field(form: URLSearchParams, name: string, label: string, max: number): string {
  const v = (form.get(name) ?? '').trim();
  if (v.length === 0) throw validationError(`${label} is required`);
  if (v.length > max) throw validationError(`${label} is longer than ${max} characters`);
  return v;
}

/** One of a closed set of values. */
export function choice<T extends string>(form: URLSearchParams, name: string, label: string, allowed: readonly T[]): T {
  const v = form.get(name) ?? '';
  if (!(allowed as readonly string[]).includes(v))
    throw validationError(`${label} must be one of ${allowed.join(', ')}`);
  return v as T;
}
