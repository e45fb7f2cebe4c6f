// A CSV upload read as it arrives, never held whole in memory: either the request body itself
// (`text/csv`) or the part named `file` of a `multipart/form-data` body (busboy), with the
// other parts of the form as fields. The byte limit holds on the file as it streams (413
// payload_too_large, and the connection is closed); a missing file part is a 422.
import busboy from 'busboy';
import type { IncomingMessage } from 'node:http';
import { ApiError, validationError } from '../shared/errors.js';
import { mediaType } from './middleware/body.js';
import type { ApiContext } from './types.js';

export interface Upload {
  /** The file's bytes, in the order they arrive; read it once, to its end. */
  file: AsyncIterable<Buffer>;
  /** The form's other fields: those sent before the file at once, the rest once it is read. */
  fields(): Record<string, string>;
  /** Bytes of the file read so far. */
  bytes(): number;
}

const CSV_TYPES = ['text/csv', 'application/csv', 'text/plain'];
const FIELD_MAX_BYTES = 64 * 1024;

const tooLarge = (limit: number) =>
  new ApiError('payload_too_large', `The file is larger than ${limit} bytes`, { Connection: 'close' });

/** Counts the bytes of `source`, refusing more than `limit`. */
async function* capped(source: AsyncIterable<Buffer>, limit: number, seen: { n: number }): AsyncGenerator<Buffer> {
  for await (const chunk of source) {
    seen.n += chunk.length;
    if (seen.n > limit) throw tooLarge(limit);
    yield chunk;
  }
}

/** Whether the request's media type is one an upload accepts (checked before anything is read). */
export function isUploadType(ctx: ApiContext): boolean {
  const type = mediaType(ctx);
  return CSV_TYPES.includes(type) || type === 'multipart/form-data';
}

export function refuseUploadType(ctx: ApiContext): never {
  const type = mediaType(ctx);
  throw new ApiError(
    'unsupported_media_type',
    `Send the CSV as the body with Content-Type: text/csv, or as the part "file" of multipart/form-data (got ${type ? JSON.stringify(type) : 'none'})`,
  );
}

/** Opens the request's upload; for multipart, resolves once the file part begins. */
export async function openUpload(ctx: ApiContext, limit: number): Promise<Upload> {
  if (!isUploadType(ctx)) refuseUploadType(ctx);
  const declared = Number(ctx.get('content-length'));
  const seen = { n: 0 };
  if (mediaType(ctx) !== 'multipart/form-data') {
    if (Number.isFinite(declared) && declared > limit) throw tooLarge(limit);
    return { file: capped(ctx.req, limit, seen), fields: () => ({}), bytes: () => seen.n };
  }
  return await openMultipart(ctx.req, limit, seen);
}

function openMultipart(req: IncomingMessage, limit: number, seen: { n: number }): Promise<Upload> {
  const fields: Record<string, string> = {};
  return new Promise<Upload>((resolve, reject) => {
    let form: busboy.Busboy;
    try {
      form = busboy({
        headers: req.headers,
        limits: { files: 1, fields: 20, fieldSize: FIELD_MAX_BYTES, fileSize: limit, parts: 21 },
      });
    } catch (err) {
      reject(validationError(`multipart/form-data: ${(err as Error).message}`));
      return;
    }
    let settled = false;
    const fail = (err: unknown) => {
      if (settled) return;
      settled = true;
      req.unpipe(form);
      reject(err instanceof ApiError ? err : validationError(`multipart/form-data: ${(err as Error).message}`));
    };
    form.on('field', (name, value, info) => {
      if (info.valueTruncated)
        fail(validationError(`the form field "${name}" is longer than ${FIELD_MAX_BYTES} bytes`));
      else fields[name] = value;
    });
    form.on('file', (name, stream) => {
      if (name !== 'file' || settled) {
        stream.resume();
        return;
      }
      settled = true;
      stream.on('limit', () => stream.destroy(tooLarge(limit)));
      const closed = new Promise<void>((done, failed) => {
        form.on('close', done);
        form.on('error', failed);
      });
      async function* file(): AsyncGenerator<Buffer> {
        yield* capped(stream, limit, seen);
        // The fields after the file arrive before the form closes.
        await closed;
      }
      resolve({ file: file(), fields: () => fields, bytes: () => seen.n });
    });
    form.on('close', () => fail(validationError('the multipart/form-data body has no part named "file"')));
    form.on('error', fail);
    req.on('error', fail);
    req.pipe(form);
  });
}
