// `tern domain verify`: looks a domain's records up again now, as POST /domains/{id}/verify does
// (the same check, the same domain.verified / domain.failed events), and prints each record's
// state: the only way to verify from the CLI a domain added without `--verified`.
//
// `tern domain add`: adds a sending domain to an organization (DKIM key and records, as
// POST /domains does) and prints the DNS records to publish. `--verified` is the operator
// override that marks the domain verified without looking at DNS; it is logged
// (DOMAIN_FORCE_VERIFIED) because it bypasses the ownership proof. `--established` marks a
// domain that already has a sending reputation: it skips the warm-up ramp (the warm-up of IP pool
// addresses still applies).
//
// The module follows the command interface of api/cli/command.ts (`Command`: name, summary,
// options, run(values, ctx)) structurally, so that tern.ts registers it with
// `...domainCommands` in its literal list.
import { pino } from 'pino';
import { loadConfig, type ToolConfig } from '../../../shared/config.js';
import { getOrgDomain } from '../../../shared/db/domains.js';
import { getOrg } from '../../../shared/db/orgs.js';
import type { Sql } from '../../../shared/db/pool.js';
import type { DomainRecord } from '../../../shared/domains/records.js';
import { checkDomain } from '../../../shared/domains/check.js';
import { DomainSetupError, provisionDomain } from '../../../shared/domains/setup.js';
import { createQueues } from '../../../shared/queues.js';
import type { Redis } from '../../../shared/redis.js';
import { redisKeys } from '../../../shared/redis-keys.js';

interface OptionSpec {
  type: 'string' | 'boolean';
  value?: string;
  help: string;
  required?: boolean;
}

type Values = Record<string, string | boolean | undefined>;

/** The part of the CLI context (api/cli/command.ts `CliContext`) this command uses. */
export interface DomainCliContext {
  config(): ToolConfig;
  env: Record<string, string | undefined>;
  sql(): Sql;
  redis(): Promise<Redis>;
  out(text: string): void;
  json(value: unknown): void;
}

/** The command failed; tern.ts prints the message and exits 1. */
export class DomainCommandError extends Error {
  override name = 'DomainCommandError';
}

function describeSetupError(err: unknown, orgId: string): unknown {
  if (!(err instanceof DomainSetupError)) return err;
  if (err.kind === 'invalid_name') return new DomainCommandError(`--name: ${err.message}`);
  if (err.kind === 'duplicate') return new DomainCommandError(`${err.message} (${orgId})`);
  return new DomainCommandError(err.message);
}

/** Web processes cache each org's domains for ≤ 30 s; tell them now (as Authenticator.invalidateOrg). */
async function announce(ctx: DomainCliContext, orgId: string): Promise<string | null> {
  try {
    const redis = await ctx.redis();
    await redis.publish(redisKeys(ctx.config().redisPrefix).authInvalidate, `org:${orgId}`);
    return null;
  } catch (err) {
    return `saved, but running web processes could not be told on Redis (${(err as Error).message}); they see it within 30 s`;
  }
}

function recordLines(records: DomainRecord[]): string[] {
  return records.map((r) => {
    const prio = r.priority !== undefined ? `${r.priority} ` : '';
    const note = r.record === 'DMARC' ? '  (recommended)' : '';
    return `  ${r.record.padEnd(10)}${r.name}  ${r.type}  ${prio}${r.value}${note}`;
  });
}

export const domainAdd = {
  name: 'domain add',
  summary: 'add a sending domain to an organization and print the DNS records to publish',
  options: {
    org: { type: 'string', value: 'org_id', help: 'organization id', required: true },
    name: { type: 'string', value: 'domain', help: 'domain name (IDNs are stored as A-labels)', required: true },
    verified: { type: 'boolean', help: 'mark it verified without checking DNS (operator override, logged)' },
    established: { type: 'boolean', help: 'an established domain: skip the daily warm-up ramp' },
    json: { type: 'boolean', help: 'print the result as JSON' },
  } satisfies Record<string, OptionSpec>,
  async run(values: Values, ctx: DomainCliContext): Promise<void> {
    const orgId = String(values.org).trim();
    const verified = values.verified === true;
    const config = ctx.config();
    const sql = ctx.sql();
    if (!(await getOrg(sql, orgId))) throw new DomainCommandError(`organization ${orgId} not found`);
    const warmup = values.established !== true;
    // The DKIM key is stored sealed with SECRET_KEY (shared/secrets.ts): this command needs it.
    const { secretKey } = loadConfig(ctx.env);
    const input = { orgId, name: String(values.name), verified, warmup };
    const domain = await provisionDomain(sql, { ...config, secretKey }, input).catch((err: unknown) => {
      throw describeSetupError(err, orgId);
    });
    if (verified) {
      // stderr: stdout carries the --json document.
      const log = pino({ name: 'tern-cli', level: config.logLevel }, pino.destination({ dest: 2, sync: true }));
      log.warn(
        { event: 'DOMAIN_FORCE_VERIFIED', orgId, domainId: domain.id, domain: domain.name },
        'domain marked verified by an operator without a DNS check',
      );
    }
    const warning = await announce(ctx, orgId);
    if (warning) process.stderr.write(`tern domain add: ${warning}\n`);
    const records = domain.records as DomainRecord[];
    if (values.json) {
      return ctx.json({
        domain: { id: domain.id, name: domain.name, status: domain.status, warmup: domain.warmup, records },
      });
    }
    ctx.out(`Domain  ${domain.id}  ${domain.name}  ${domain.status}${warmup ? '' : '  established (no warm-up ramp)'}`);
    ctx.out('Publish these DNS records, then verify (POST /api/v1/domains/<id>/verify):');
    for (const line of recordLines(records)) ctx.out(line);
  },
};

export const domainVerify = {
  name: 'domain verify',
  summary: "look a domain's DNS records up again now and print each record's state",
  options: {
    org: { type: 'string', value: 'org_id', help: 'organization id', required: true },
    name: { type: 'string', value: 'domain', help: 'domain name or id', required: true },
    json: { type: 'boolean', help: 'print the result as JSON' },
  } satisfies Record<string, OptionSpec>,
  async run(values: Values, ctx: DomainCliContext): Promise<void> {
    const orgId = String(values.org).trim();
    const ref = String(values.name).trim().toLowerCase().replace(/\.$/, '');
    const sql = ctx.sql();
    const config = ctx.config();
    if (!(await getOrg(sql, orgId))) throw new DomainCommandError(`organization ${orgId} not found`);
    const d = await getOrgDomain(sql, orgId, ref);
    if (!d) throw new DomainCommandError(`domain ${ref} not found in organization ${orgId}`);
    // The verdict's events (domain.verified, domain.failed) go out through the same queues as the API's.
    const redis = await ctx.redis();
    const queues = createQueues(redis, redisKeys(config.redisPrefix).bullPrefix);
    let saved;
    try {
      saved = await checkDomain(sql, config, d, queues);
    } finally {
      await queues.close();
    }
    if (!saved) throw new DomainCommandError(`domain ${ref} was removed during the check`);
    const warning = saved.status !== d.status ? await announce(ctx, orgId) : null;
    if (warning) process.stderr.write(`tern domain verify: ${warning}\n`);
    const records = saved.records as DomainRecord[];
    if (values.json) {
      return ctx.json({ domain: { id: saved.id, name: saved.name, status: saved.status, records } });
    }
    ctx.out(`Domain  ${saved.id}  ${saved.name}  ${saved.status}`);
    for (const [i, line] of recordLines(records).entries()) ctx.out(`${line}  ${records[i]!.status}`);
  },
};

export const domainCommands = [domainAdd, domainVerify];
