// Reads a JSON request body with a byte limit: over the limit → 413 payload_too_large (checked
// on Content-Length first, then on the bytes actually read), not JSON → 415, unparseable → 400
// invalid_json. An empty body leaves ctx.state.body undefined.
import type Koa from 'koa';
import { ApiError } from '../../shared/errors.js';
import type { ApiCustom, ApiState } from '../types.js';

export async function readRaw(
  req: NodeJS.ReadableStream & { headers: Record<string, unknown> },
  limit: number,
): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    throw new ApiError('payload_too_large', `Request body is larger than ${limit} bytes`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    size += buf.length;
    if (size > limit) {
      throw new ApiError('payload_too_large', `Request body is larger than ${limit} bytes`);
    }
    chunks.push(buf);
  }
  return Buffer.concat(chunks, size);
}

export function jsonBody(limit: number): Koa.Middleware<ApiState, ApiCustom> {
  return async (ctx, next) => {
    if (ctx.method === 'GET' || ctx.method === 'HEAD' || (!ctx.request.length && !ctx.get('transfer-encoding'))) {
      return await next();
    }
    const type = ctx.request.type;
    if (type && type !== 'application/json' && !type.endsWith('+json')) {
      throw new ApiError('unsupported_media_type', 'Request body must be application/json');
    }
    const raw = await readRaw(ctx.req as never, limit);
    if (raw.length > 0) {
      try {
        ctx.state.body = JSON.parse(raw.toString('utf8'));
      } catch (err) {
        throw new ApiError('invalid_json', `Request body is not valid JSON: ${(err as Error).message}`);
      }
    }
    await next();
  };
}
