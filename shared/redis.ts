// Redis connections, to one Redis, to a Redis Cluster (`redis+cluster://h1:p1,h2:p2`) or to the
// master a set of Sentinels names (`redis+sentinel://h1:p1,h2:p2/<master name>`). The API
// side fails fast (no offline queue, one retry, short timeouts) so a Redis outage answers 503
// instead of hanging a request; BullMQ connections retry forever, as BullMQ requires. On a
// cluster every multi-key command stays in one slot through the hash tags of redis-keys.ts.
import { Cluster, Redis as SingleRedis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { parseClusterUrl, parseSentinelUrl, type ClusterUrl, type SentinelUrl } from './redis-url.js';

export { parseClusterUrl, parseSentinelUrl };

/** A connection to one Redis or to a Redis Cluster: both take the same commands. */
export type Redis = SingleRedis | Cluster;

export type RedisRole = 'api' | 'bullmq' | 'subscriber';

/** Options of a connection with ioredis's default (legacy) reply shapes, which Tern's code reads. */
type LegacyOptions = RedisOptions & { replyMapping?: 'legacy' };

const BY_ROLE: Record<RedisRole, RedisOptions> = {
  api: { enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 2000 },
  bullmq: { maxRetriesPerRequest: null, enableReadyCheck: false },
  subscriber: { maxRetriesPerRequest: null },
};

export function createRedis(url: string, role: RedisRole, name = 'tern'): Redis {
  const common: RedisOptions = {
    connectionName: `${name}:${role}`,
    connectTimeout: 2000,
    // Reconnect with a capped backoff; the process keeps serving and /readyz reports the state.
    retryStrategy: (times) => Math.min(times * 200, 2000),
  };
  const cluster = parseClusterUrl(url);
  const sentinel = parseSentinelUrl(url);
  const client = cluster
    ? createCluster(cluster, { ...common, ...BY_ROLE[role] })
    : sentinel
      ? new SentinelRedis({ ...common, ...BY_ROLE[role], ...sentinelOptions(sentinel) } as LegacyOptions)
      : new SingleRedis(url, { ...common, ...BY_ROLE[role] });
  // Errors surface on the commands that fail; an unhandled 'error' event would crash the process.
  client.on('error', () => {});
  return client;
}

/**
 * The options of a connection to the master the Sentinels name. Every connection (BullMQ's
 * blocking ones too, which it makes with duplicate()) asks the Sentinels for the master on each
 * (re)connect, and leaves a master that stops being one by three ways, whichever comes first: the
 * Sentinels' +switch-master message (failoverDetector), a READONLY answer from a demoted master
 * (reconnect, the command sent again to the new one), and the ready check's ROLE test on connect
 * (a connection that reaches a replica tries again).
 */
function sentinelOptions(url: SentinelUrl): RedisOptions {
  return {
    sentinels: url.sentinels,
    name: url.name,
    role: 'master',
    db: url.db,
    ...(url.username ? { username: url.username } : {}),
    ...(url.password ? { password: url.password } : {}),
    ...(url.sentinelPassword ? { sentinelPassword: url.sentinelPassword } : {}),
    ...(url.tls ? { tls: {} } : {}),
    failoverDetector: true,
    enableReadyCheck: true,
    reconnectOnError: (err) => (err.message.startsWith('READONLY') ? 2 : false),
    sentinelRetryStrategy: (times) => Math.min(times * 200, 1000),
    sentinelCommandTimeout: 1000,
  };
}

/**
 * A Sentinel-mode connection that a failover cannot end. The failover detector of the previous
 * connection stays subscribed while ioredis reconnects to a master that is gone; the Sentinels'
 * +switch-master then disconnects the connector in the middle of its look-up, which rejects the
 * connect with "Connection is closed" and leaves the client ended for good ("end": every command
 * refused, no reconnect), the hang of BullMQ workers after a failover (bullmq#3088). Here such a
 * look-up simply starts again; a connect ended by our own disconnect()/quit() still ends.
 * Duplicates (BullMQ's blocking connections) are of this class too.
 */
class SentinelRedis extends SingleRedis {
  constructor(options: LegacyOptions) {
    super(options);
    const self = this as unknown as {
      manuallyClosing: boolean;
      connector: { connect: (emit: unknown) => Promise<unknown>; connecting: boolean };
    };
    const connect = self.connector.connect.bind(self.connector);
    const again = async (emit: unknown): Promise<unknown> => {
      try {
        return await connect(emit);
      } catch (err) {
        if (self.manuallyClosing || (err as Error).message !== 'Connection is closed.') throw err;
        return await again(emit);
      }
    };
    self.connector.connect = again;
    // A client ended by quit() leaves its failover detector's Sentinel connections open (only the
    // connector's disconnect closes them), which would keep a CLI command from exiting.
    this.on('end', () => (self.connector as unknown as { disconnect(): void }).disconnect());
  }

  override duplicate<Override extends Partial<RedisOptions> | undefined = undefined>(
    override?: Override,
  ): ReturnType<SingleRedis['duplicate']> {
    return new SentinelRedis({ ...this.options, ...override } as LegacyOptions);
  }
}

function createCluster(url: ClusterUrl, node: RedisOptions): Cluster {
  const { enableOfflineQueue, enableReadyCheck, retryStrategy, ...redisOptions } = node;
  const options: ClusterOptions = {
    // The options of every node's connection; offline queue, ready check and reconnection are
    // the cluster client's own.
    redisOptions: {
      ...redisOptions,
      ...(url.username ? { username: url.username } : {}),
      ...(url.password ? { password: url.password } : {}),
      ...(url.tls ? { tls: {} } : {}),
    },
    ...(enableOfflineQueue === undefined ? {} : { enableOfflineQueue }),
    ...(enableReadyCheck === undefined ? {} : { enableReadyCheck }),
    clusterRetryStrategy: (times) => retryStrategy!(times) ?? null,
    // A failover moves slots; the client follows MOVED/ASK and refreshes its slot table.
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 300,
    slotsRefreshTimeout: 2000,
  };
  return new Cluster(url.nodes, options);
}

/**
 * The masters of a cluster client, each named `host:port`, for checks that read one node's
 * settings (INFO, CONFIG); null for a single Redis.
 */
export function clusterMasters(client: Redis): { name: string; node: SingleRedis }[] | null {
  if (!(client instanceof Cluster)) return null;
  return client.nodes('master').map((node) => ({ name: `${node.options.host}:${node.options.port}`, node }));
}

const corked = new WeakSet<Redis>();

/**
 * Holds the client's writes until the end of this event-loop turn, so that the commands of every
 * request read in the same turn leave in one socket write. Under load the API sends at least one
 * command per request (the rate limit); a write each is a syscall and a wake-up of Redis each.
 * Costs at most one loop turn of latency; ioredis's auto-pipelining does the same through a
 * Pipeline per batch and measured slower (bench/api).
 */
export function coalesceWrites(client: Redis): void {
  // A cluster client writes to several sockets; it is left as it is.
  if (client instanceof Cluster) return;
  const stream = client.stream as { cork?: () => void; uncork?: () => void } | undefined;
  if (corked.has(client) || client.status !== 'ready' || typeof stream?.cork !== 'function') return;
  corked.add(client);
  stream.cork();
  setImmediate(() => {
    corked.delete(client);
    stream.uncork!();
  });
}

/** Waits until the client is ready, or gives up after `ms` (the caller decides what that means). */
export async function waitReady(client: Redis, ms: number): Promise<boolean> {
  if (client.status === 'ready') return true;
  return await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => {
      client.off('ready', onReady);
      resolve(false);
    }, ms);
    const onReady = (): void => {
      clearTimeout(timer);
      resolve(true);
    };
    client.once('ready', onReady);
  });
}

export async function closeRedis(client: Redis): Promise<void> {
  if (client.status === 'end') return;
  // QUIT waits in the offline queue of a client that is not connected, which never drains while
  // Redis is down; such a client has nothing to flush, so it is simply dropped.
  if (client.status !== 'ready') {
    client.disconnect();
    return;
  }
  const timer = setTimeout(() => client.disconnect(), 2000);
  try {
    await client.quit();
  } catch {
    client.disconnect();
  } finally {
    clearTimeout(timer);
  }
}
