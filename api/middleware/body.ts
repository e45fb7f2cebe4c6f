// Reads a JSON request body with a byte limit: over the limit → 413 payload_too_large (checked
// on Content-Length first, then on the bytes actually read), sent without a JSON Content-Type →
// 415, unparseable → 400 invalid_json, nested deeper than MAX_DEPTH (api/text-checks.ts) → 422
// validation_error. An empty body leaves ctx.state.body undefined. Refusals
// sent before the body was read close the connection (api/middleware/errors.ts): the rest of the
// body would otherwise have to be read to reuse it.
import type { IncomingMessage } from 'node:http';
import type Koa from 'koa';
import { ApiError, validationError } from '../../shared/errors.js';
import { textProblem } from '../text-checks.js';
import type { ApiCustom, ApiState } from '../types.js';

/** The media type of the request, lower-cased without parameters ('' when there is none). */
export function mediaType(ctx: { get(name: string): string }): string {
  return (ctx.get('content-type').split(';')[0] ?? '').trim().toLowerCase();
}

function isJson(type: string): boolean {
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
}

/** True when the request announces a body (a length above 0, or chunked). */
export function hasBody(ctx: { get(name: string): string }): boolean {
  const length = ctx.get('content-length');
  return (length !== '' && length !== '0') || ctx.get('transfer-encoding') !== '';
}

const tooLarge = (limit: number) =>
  new ApiError('payload_too_large', `Request body is larger than ${limit} bytes`, { Connection: 'close' });

export async function readRaw(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) throw tooLarge(limit);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    size += buf.length;
    if (size > limit) throw tooLarge(limit);
    chunks.push(buf);
  }
  return Buffer.concat(chunks, size);
}

export function jsonBody(limit: number): Koa.Middleware<ApiState, ApiCustom> {
  return async (ctx, next) => {
    if (ctx.method === 'GET' || ctx.method === 'HEAD' || !hasBody(ctx)) {
      await next();
      return;
    }
    const type = mediaType(ctx);
    if (!isJson(type)) {
      throw new ApiError(
        'unsupported_media_type',
        `Request body must be sent with Content-Type: application/json (got ${type ? JSON.stringify(type) : 'none'})`,
      );
    }
    const raw = await readRaw(ctx.req, limit);
    if (raw.length > 0) {
      try {
        ctx.state.body = JSON.parse(raw.toString('utf8'));
      } catch (err) {
        throw new ApiError('invalid_json', `Request body is not valid JSON: ${(err as Error).message}`);
      }
      // Before anything hashes or stores the body (the Idempotency-Key hash recurses).
      const problem = textProblem(ctx.state.body, 'body', true);
      if (problem) throw validationError(problem);
    }
    await next();
  };
}
