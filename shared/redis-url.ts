// The Redis Cluster and Sentinel forms of REDIS_URL, parsed without loading a Redis client
// (config.ts checks them).

/** The seed nodes and credentials of a `redis+cluster://` (or `rediss+cluster://`) URL. */
export interface ClusterUrl {
  nodes: { host: string; port: number }[];
  username?: string;
  password?: string;
  tls: boolean;
}

const CLUSTER_URL = /^(rediss?)\+cluster:\/\/(?:([^:@/]*)(?::([^@/]*))?@)?([^/?#]+)\/?(?:[?#].*)?$/i;

/**
 * Parses `redis+cluster://[user:password@]host1:port1,host2:port2,…` (`rediss+cluster://` for
 * TLS); null for any other URL (a single Redis). Throws on a cluster URL without a usable node.
 */
export function parseClusterUrl(url: string): ClusterUrl | null {
  if (!isClusterUrl(url)) return null;
  const m = CLUSTER_URL.exec(url);
  if (!m) throw new Error('must be redis+cluster://[user:password@]host:port,host:port,…');
  const nodes = hostPorts(m[4]!);
  const decode = (v: string | undefined) => (v ? decodeURIComponent(v) : undefined);
  return {
    nodes,
    ...(decode(m[2]) ? { username: decode(m[2]) } : {}),
    ...(decode(m[3]) ? { password: decode(m[3]) } : {}),
    tls: m[1]!.toLowerCase() === 'rediss',
  };
}

/** `h1:p1,[::1]:p2,…` → hosts and ports; throws on an item that is not host:port. */
function hostPorts(list: string): { host: string; port: number }[] {
  return list.split(',').map((item) => {
    const n = /^(\[[0-9a-fA-F:.]+\]|[^:\s[\]]+):(\d{1,5})$/.exec(item.trim());
    if (!n || Number(n[2]) === 0 || Number(n[2]) > 65535) throw new Error(`must list host:port nodes, got "${item}"`);
    return { host: n[1]!.replace(/^\[|\]$/g, ''), port: Number(n[2]) };
  });
}

/** Whether REDIS_URL names a Redis Cluster. */
export function isClusterUrl(url: string): boolean {
  return /^rediss?\+cluster:/i.test(url);
}

/** The Sentinels, master name and credentials of a `redis+sentinel://` URL. */
export interface SentinelUrl {
  sentinels: { host: string; port: number }[];
  /** The master's name in the Sentinels' configuration (`sentinel monitor <name> …`). */
  name: string;
  db: number;
  username?: string;
  /** The password of the master and its replicas. */
  password?: string;
  /** The Sentinels' own password (`?sentinel_password=`), when they have one. */
  sentinelPassword?: string;
  /** TLS to the master and replicas (`rediss+sentinel://`). */
  tls: boolean;
}

const SENTINEL_URL = /^(rediss?)\+sentinel:\/\/(?:([^:@/]*)(?::([^@/]*))?@)?([^/?#]+)\/([^/?#]+)\/?(?:\?([^#]*))?$/i;

/**
 * Parses `redis+sentinel://[user:password@]host1:port1,host2:port2,…/<master name>[?db=N]`
 * (`rediss+sentinel://` for TLS to the master); null for any other URL. Throws on a Sentinel URL
 * without a usable Sentinel, master name or db.
 */
export function parseSentinelUrl(url: string): SentinelUrl | null {
  if (!/^rediss?\+sentinel:/i.test(url)) return null;
  const m = SENTINEL_URL.exec(url);
  if (!m) throw new Error('must be redis+sentinel://[:password@]host:port,host:port,…/<master name>[?db=N]');
  const query = new URLSearchParams(m[6] ?? '');
  const unknown = [...query.keys()].filter((k) => k !== 'db' && k !== 'sentinel_password');
  if (unknown.length > 0) throw new Error(`takes only db and sentinel_password, got ${unknown.join(', ')}`);
  const db = query.get('db') ?? '0';
  if (!/^\d{1,5}$/.test(db)) throw new Error(`db must be a number, got "${db}"`);
  const decode = (v: string | undefined | null) => (v ? decodeURIComponent(v) : undefined);
  const sentinelPassword = query.get('sentinel_password') ?? undefined;
  return {
    sentinels: hostPorts(m[4]!),
    name: decodeURIComponent(m[5]!),
    db: Number(db),
    ...(decode(m[2]) ? { username: decode(m[2]) } : {}),
    ...(decode(m[3]) ? { password: decode(m[3]) } : {}),
    ...(sentinelPassword ? { sentinelPassword } : {}),
    tls: m[1]!.toLowerCase() === 'rediss',
  };
}
