// `tern doctor [--domain NAME] [--json]` (DESIGN §15): is this install ready to send? Every
// check says ok, warn or fail, with one line on how to fix it; the exit status is 0 (all ok),
// 1 (warnings) or 2 (failures). With --domain, only that domain's DNS is checked.
import { ConfigError, loadToolConfig, type ToolConfig } from '../../../shared/config.js';
import { createPool } from '../../../shared/db/pool.js';
import { createResolver } from '../../../shared/domains/verify.js';
import { closeRedis, createRedis, waitReady } from '../../../shared/redis.js';
import { redactUrl, UsageError, type Command, type Values } from '../command.js';
import { exitStatus, fail, guarded, render, type Check } from '../doctor/check.js';
import { domainChecks } from '../doctor/domains.js';
import { journalCheck } from '../doctor/journal.js';
import { outboundChecks } from '../doctor/outbound.js';
import { parseScale, postgresChecks, type Scale } from '../doctor/postgres.js';
import { poolChecks } from '../doctor/pools.js';
import { redisChecks } from '../doctor/redis.js';
import { baseUrlCheck, secretKeyCheck } from '../doctor/settings.js';
import { tlsChecks } from '../doctor/tls.js';

type Env = Record<string, string | undefined>;

/** The configuration, read even when SECRET_KEY is missing or short (that is a check of its own). */
function configOf(env: Env): ToolConfig {
  return loadToolConfig({ ...env, SECRET_KEY: undefined });
}

async function redisGroup(config: ToolConfig): Promise<Check[]> {
  const fix = 'check REDIS_URL and that Redis runs';
  return await guarded('Redis', fix, async () => {
    const redis = createRedis(config.redisUrl, 'api', 'tern-doctor');
    try {
      if (!(await waitReady(redis, 3000))) return [fail('Redis', `cannot reach ${redactUrl(config.redisUrl)}`, fix)];
      return await redisChecks(redis);
    } finally {
      await closeRedis(redis);
    }
  });
}

async function run(values: Values, env: Env): Promise<Check[]> {
  let config: ToolConfig;
  try {
    config = configOf(env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return [fail('configuration', err.message, `fix ${err.variable}`)];
  }
  let scale: Scale;
  try {
    scale = parseScale(values.scale as string | undefined);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const only = typeof values.domain === 'string' ? values.domain.trim().toLowerCase() : null;
  const resolver = createResolver(config.dnsServers, 3000);
  const sql = createPool(config.databaseUrl, { max: 3, application: 'tern-doctor', pooler: config.databasePooler });
  const pgFix = 'check DATABASE_URL and that Postgres runs';
  try {
    const domains = guarded('domains', pgFix, () => domainChecks(sql, config, resolver, only));
    if (only !== null) return await domains;
    const groups = await Promise.all([
      Promise.resolve([secretKeyCheck(env), baseUrlCheck(env, config.baseUrl)]),
      journalCheck(config.deliveryJournalDir).then((c) => [c]),
      tlsChecks(config),
      outboundChecks(config, resolver, (values['probe-domain'] as string | undefined) ?? 'gmail.com'),
      redisGroup(config),
      guarded('Postgres', pgFix, () => postgresChecks(sql, config, scale)),
      guarded('IP pools', pgFix, () => poolChecks(sql, config, resolver)),
      domains,
    ]);
    return groups.flat();
  } finally {
    await sql.end({ timeout: 5 });
  }
}

const doctor: Command = {
  name: 'doctor',
  summary:
    'check that this install is ready to send (DNS, reverse DNS, port 25, TLS, settings, Redis, Postgres, IP pools)',
  options: {
    domain: { type: 'string', value: 'name', help: "check only this domain's DNS records" },
    json: { type: 'boolean', help: 'print {"checks":[{name,status,message,fix}]} as one JSON line' },
    scale: {
      type: 'string',
      value: 'web=N,worker=N,relay=N,mx=N',
      help: 'the formation Postgres connections are sized for (default 1 of each)',
    },
    'probe-domain': {
      type: 'string',
      value: 'domain',
      help: 'receiving domain whose MX the port-25 check dials (default gmail.com)',
    },
  },
  async run(values, ctx) {
    const checks = await run(values, ctx.env);
    if (values.json) ctx.json({ checks });
    else ctx.out(render(checks));
    return exitStatus(checks);
  },
};

export const doctorCommands: Command[] = [doctor];
