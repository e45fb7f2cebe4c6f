// Redis namespaces of test files. Every prefix a test file uses comes from `testPrefix()` and is
// registered here; whoever started the processes on it deletes its keys when they stop
// (`clearPrefix`; `startApi` does it for the prefixes it made), and the root hook fails a test
// file that left keys under any of its prefixes, then deletes them.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { origin } from './resources.js';

export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Prefixes made since the last check, with the test file that made each. */
const made = new Map<string, string>();

/** A fresh Redis prefix for this test file (`terntest:<10 hex>`). */
export function testPrefix(): string {
  const prefix = `terntest:${randomBytes(5).toString('hex')}`;
  made.set(prefix, origin());
  return prefix;
}

/** Deletes every key under the prefixes; returns the keys it found (a few are enough to name). */
async function unlinkUnder(prefixes: string[]): Promise<Map<string, string[]>> {
  const found = new Map<string, string[]>();
  if (prefixes.length === 0) return found;
  const redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 1, lazyConnect: true });
  try {
    await redis.connect();
    for (const prefix of prefixes) {
      const keys: string[] = [];
      // SCAN, never KEYS: the Redis is shared with other test runs.
      for await (const batch of redis.scanStream({ match: `${prefix}:*`, count: 1000 }) as AsyncIterable<string[]>) {
        if (batch.length === 0) continue;
        keys.push(...batch);
        await redis.unlink(...batch);
      }
      if (keys.length > 0) found.set(prefix, keys);
    }
  } finally {
    redis.disconnect();
  }
  return found;
}

/** Deletes every key under `prefix` (its processes have stopped). */
export async function clearPrefix(prefix: string): Promise<void> {
  await unlinkUnder([prefix]);
}

/**
 * The root hook's check: which of `prefixes` (default: every prefix made since the last check)
 * still hold keys, each named with a key count, a sample key and the test file that made it.
 * Those keys are deleted either way.
 */
export async function leftoverKeys(prefixes: string[] = [...made.keys()]): Promise<string[]> {
  const origins = new Map(prefixes.map((p) => [p, made.get(p) ?? 'unknown test file']));
  for (const p of prefixes) made.delete(p);
  const found = await unlinkUnder(prefixes);
  return [...found].map(
    ([prefix, keys]) => `${keys.length} keys under ${prefix} (e.g. ${keys[0]}; prefix made at ${origins.get(prefix)})`,
  );
}
