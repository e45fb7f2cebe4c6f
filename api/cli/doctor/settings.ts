// Settings every process shares: SECRET_KEY (HMACs of VERP, tracking and unsubscribe tokens) and
// BASE_URL (the public address of tracking links, unsubscribe pages and raw_url).
import { MIN_SECRET_LENGTH } from '../../../shared/config.js';
import { ok, fail, type Check } from './check.js';

type Env = Record<string, string | undefined>;

export function secretKeyCheck(env: Env): Check {
  const name = 'SECRET_KEY';
  const fix = 'set SECRET_KEY to 32 or more random characters (openssl rand -base64 48), the same in every process';
  const value = env.SECRET_KEY ?? '';
  if (value === '') return fail(name, 'not set', fix);
  if (value.length < MIN_SECRET_LENGTH)
    return fail(name, `${value.length} characters; at least ${MIN_SECRET_LENGTH} needed`, fix);
  if (new Set(value).size < 8)
    return fail(name, `${value.length} characters, but only ${new Set(value).size} distinct: not random`, fix);
  return ok(name, `set (${value.length} characters)`);
}

export function baseUrlCheck(env: Env, baseUrl: string): Check {
  const name = 'BASE_URL';
  const fix = 'serve the web process behind HTTPS and set BASE_URL=https://<its public host name>';
  if (!env.BASE_URL) {
    return fail(name, `not set: links in mail (tracking, unsubscribe) would point at ${baseUrl}`, fix);
  }
  const url = new URL(baseUrl);
  if (url.protocol !== 'https:') {
    return fail(name, `${baseUrl} is not https: one-click unsubscribe (RFC 8058) and browsers want https`, fix);
  }
  if (/^(localhost|127\.|\[::1\])/.test(url.hostname)) {
    return fail(name, `${baseUrl} is a local address: recipients cannot follow its links`, fix);
  }
  return ok(name, baseUrl);
}
