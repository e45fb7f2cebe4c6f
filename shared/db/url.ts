// DATABASE_URL in libpq's multi-host form, `postgres://u@h1:p1,h2:p2/db?target_session_attrs=
// read-write`: postgres.js tries the hosts in turn and keeps the first that matches
// target_session_attrs (read-write: the primary), on every connect and reconnect, so a process
// finds the new primary after a failover. WHATWG's URL parser refuses a host list: these helpers
// work on the text instead.

const FORM = /^([a-z][a-z0-9+.-]*:\/\/)([^@/?#]*@)?([^/?#]*)(\/[^?#]*)?(.*)$/i;
const HOST = /^(\[[0-9a-fA-F:.]+\]|[^:\s[\],]+)(?::(\d{1,5}))?$/;

/**
 * The URL with only its first host: what WHATWG's parser takes (validation, display). Throws
 * when a listed host is not `host[:port]`.
 */
export function firstHostUrl(url: string): string {
  const m = FORM.exec(url);
  if (!m) return url;
  const hosts = m[3]!.split(',');
  if (hosts.length === 1) return url;
  for (const h of hosts) {
    const n = HOST.exec(h);
    if (!n || (n[2] !== undefined && (Number(n[2]) === 0 || Number(n[2]) > 65535))) {
      throw new Error(`must list host[:port] items, got "${h}"`);
    }
  }
  return `${m[1]}${m[2] ?? ''}${hosts[0]}${m[4] ?? ''}${m[5]}`;
}

/** The same URL (every host kept) naming database `db`. */
export function withDatabase(url: string, db: string): string {
  const m = FORM.exec(url);
  if (!m) throw new Error('not a postgres:// URL');
  return `${m[1]}${m[2] ?? ''}${m[3]}/${encodeURIComponent(db)}${m[5]}`;
}

/** The database a URL names (`postgres` by default, as libpq's default is the user's name). */
export function databaseName(url: string): string {
  const m = FORM.exec(url);
  const path = m?.[4]?.slice(1) ?? '';
  return path ? decodeURIComponent(path) : 'postgres';
}
