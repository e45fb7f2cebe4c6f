// Redis as BullMQ needs it: `maxmemory-policy noeviction` (any other policy may evict queue
// keys: jobs are lost without a trace) and persistence on (AOF or RDB snapshots), or a restart
// loses every queued job. Read from INFO where managed services disable CONFIG. On a Redis
// Cluster every master is checked, each named in its checks.
import { clusterMasters, type Redis } from '../../../shared/redis.js';
import { fail, ok, warn, type Check } from './check.js';

function infoField(info: string, field: string): string | null {
  const m = new RegExp(`^${field}:(.*)$`, 'm').exec(info);
  return m ? m[1]!.trim() : null;
}

async function saveSetting(redis: Redis): Promise<string | null> {
  try {
    const reply = (await redis.config('GET', 'save')) as string[];
    return reply[1] ?? '';
  } catch {
    return null; // CONFIG disabled (managed Redis)
  }
}

export async function redisChecks(redis: Redis): Promise<Check[]> {
  const masters = clusterMasters(redis);
  if (!masters) return await nodeChecks(redis, '');
  const perNode = await Promise.all(masters.map(({ name, node }) => nodeChecks(node, ` (${name})`)));
  return perNode.flat();
}

async function nodeChecks(redis: Redis, node: string): Promise<Check[]> {
  const [memory, persistence, server] = await Promise.all([
    redis.info('memory'),
    redis.info('persistence'),
    redis.info('server'),
  ]);
  const checks: Check[] = [];
  const policy = infoField(memory, 'maxmemory_policy') ?? 'unknown';
  const policyFix =
    'set maxmemory-policy noeviction (redis.conf, CONFIG SET maxmemory-policy noeviction, or the provider’s parameter group)';
  checks.push(
    policy === 'noeviction'
      ? ok(`Redis maxmemory-policy${node}`, 'noeviction')
      : fail(
          `Redis maxmemory-policy${node}`,
          `${policy}: Redis may evict BullMQ's keys and lose queued jobs`,
          policyFix,
        ),
  );
  const aof = infoField(persistence, 'aof_enabled') === '1';
  const save = await saveSetting(redis);
  const version = infoField(server, 'redis_version') ?? '?';
  const persistFix =
    'turn on AOF (appendonly yes) or RDB snapshots (save 60 1000), or pick a managed plan with persistence';
  if (aof) checks.push(ok(`Redis persistence${node}`, `AOF on (Redis ${version})`));
  else if (save)
    checks.push(ok(`Redis persistence${node}`, `RDB snapshots (save ${save}); AOF off (Redis ${version})`));
  else if (save === null) {
    checks.push(
      warn(`Redis persistence${node}`, 'AOF off, and the RDB setting cannot be read (CONFIG is disabled)', persistFix),
    );
  } else {
    checks.push(fail(`Redis persistence${node}`, 'neither AOF nor RDB: a restart loses every queued job', persistFix));
  }
  return checks;
}
