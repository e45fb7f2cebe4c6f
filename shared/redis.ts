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
