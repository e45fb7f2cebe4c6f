// Redis connections. The API side fails fast (no offline queue, one retry, short timeouts) so a
// Redis outage answers 503 instead of hanging a request; BullMQ connections retry forever, as
// BullMQ requires.
import { Redis, type RedisOptions } from 'ioredis';

export type { Redis };

export type RedisRole = 'api' | 'bullmq' | 'subscriber';

export function createRedis(url: string, role: RedisRole, name = 'tern'): Redis {
  const common: RedisOptions = {
    connectionName: `${name}:${role}`,
    connectTimeout: 2000,
    // Reconnect with a capped backoff; the process keeps serving and /readyz reports the state.
    retryStrategy: (times) => Math.min(times * 200, 2000),
  };
  const byRole: Record<RedisRole, RedisOptions> = {
    api: { enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 2000 },
    bullmq: { maxRetriesPerRequest: null, enableReadyCheck: false },
    subscriber: { maxRetriesPerRequest: null },
  };
  const client = new Redis(url, { ...common, ...byRole[role] });
  // Errors surface on the commands that fail; an unhandled 'error' event would crash the process.
  client.on('error', () => {});
  return client;
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
