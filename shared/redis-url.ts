// The Redis Cluster form of REDIS_URL, parsed without loading a Redis client (config.ts checks it).

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
  const nodes = m[4]!.split(',').map((item) => {
    const n = /^(\[[0-9a-fA-F:.]+\]|[^:\s[\]]+):(\d{1,5})$/.exec(item.trim());
    if (!n || Number(n[2]) === 0 || Number(n[2]) > 65535) throw new Error(`must list host:port nodes, got "${item}"`);
    return { host: n[1]!.replace(/^\[|\]$/g, ''), port: Number(n[2]) };
  });
  const decode = (v: string | undefined) => (v ? decodeURIComponent(v) : undefined);
  return {
    nodes,
    ...(decode(m[2]) ? { username: decode(m[2]) } : {}),
    ...(decode(m[3]) ? { password: decode(m[3]) } : {}),
    tls: m[1]!.toLowerCase() === 'rediss',
  };
}

/** Whether REDIS_URL names a Redis Cluster. */
export function isClusterUrl(url: string): boolean {
  return /^rediss?\+cluster:/i.test(url);
}
