// Form bodies of the console's POSTs: application/x-www-form-urlencoded (a few KiB at most), or
// multipart/form-data on the routes that take a file (parsed by the Fetch API's own FormData
// reader, so no parser of our own).
import { ApiError, validationError } from '../../shared/errors.js';
import { hasBody, mediaType, readRaw } from '../middleware/body.js';
import { hasControl, hasNul } from '../text-checks.js';
import type { ApiContext } from '../types.js';
import type { UploadedFile } from './respond.js';

const FORM_LIMIT = 16 * 1024;

/** Postgres refuses NUL in text: a field holding one is a 422, not a 500 later. */
function refuseNulFields(form: URLSearchParams): URLSearchParams {
  for (const [name, value] of form) {
    if (hasNul(name) || hasNul(value))
      throw validationError(`Form field ${JSON.stringify(name)} holds a NUL character`);
  }
  return form;
}

export interface ReadForm {
  form: URLSearchParams;
  files: Map<string, UploadedFile>;
}

export async function readForm(ctx: ApiContext, uploadLimit = 0): Promise<ReadForm> {
  const files = new Map<string, UploadedFile>();
  if (ctx.method !== 'POST') return { form: new URLSearchParams(), files };
  if (!hasBody(ctx)) return { form: new URLSearchParams(), files };
  const type = mediaType(ctx);
  if (type === 'application/x-www-form-urlencoded') {
    const raw = await readRaw(ctx.req, FORM_LIMIT);
    return { form: refuseNulFields(new URLSearchParams(raw.toString('utf8'))), files };
  }
  if (type === 'multipart/form-data' && uploadLimit > 0) {
    const raw = await readRaw(ctx.req, uploadLimit);
    let data: FormData;
    try {
      data = await new Response(raw, { headers: { 'content-type': ctx.get('content-type') } }).formData();
    } catch {
      throw validationError('The form could not be read (malformed multipart body)');
    }
    const form = new URLSearchParams();
    for (const [name, value] of data.entries()) {
      if (typeof value === 'string') form.append(name, value);
      else if (hasNul(name)) throw validationError(`Form field ${JSON.stringify(name)} holds a NUL character`);
      else files.set(name, { filename: value.name, type: value.type, data: Buffer.from(await value.arrayBuffer()) });
    }
    return { form: refuseNulFields(form), files };
  }
  throw new ApiError(
    'unsupported_media_type',
    uploadLimit > 0
      ? 'This form is sent as multipart/form-data or application/x-www-form-urlencoded'
      : 'Console forms are sent as application/x-www-form-urlencoded',
  );
}

/** A required one-line text field (a name, an email), trimmed, within a length range. */
export function field(form: URLSearchParams, name: string, label: string, max: number): string {
  const v = (form.get(name) ?? '').trim();
  if (v.length === 0) throw validationError(`${label} is required`);
  if (v.length > max) throw validationError(`${label} is longer than ${max} characters`);
  if (hasControl(v)) throw validationError(`${label} must not contain control characters`);
  return v;
}

/** One of a closed set of values. */
export function choice<T extends string>(form: URLSearchParams, name: string, label: string, allowed: readonly T[]): T {
  const v = form.get(name) ?? '';
  if (!(allowed as readonly string[]).includes(v))
    throw validationError(`${label} must be one of ${allowed.join(', ')}`);
  return v as T;
}
