// `tern pool add|list|remove|assign|unassign`: IP pools (DESIGN §14). A pool is a named set of
// local addresses with the name said in EHLO from them; assigned to an organization, a domain or
// a stream, it carries that mail (the most specific assignment wins: domain, organization,
// stream; no pool = the host's default address). Delivery workers read pools with each message,
// so a change applies to the next delivery without a restart.
import { isIP } from 'node:net';
import { findDomainsByRef } from '../../../shared/db/domains.js';
import {
  addPool,
  assignPool,
  deletePool,
  getPoolByName,
  listPools,
  poolOfAddress,
  POOL_STREAMS,
  unassignPool,
  type PoolRow,
  type PoolStream,
} from '../../../shared/db/ip-pools.js';
import { getOrg } from '../../../shared/db/orgs.js';
import type { Sql } from '../../../shared/db/pool.js';
import { normaliseIp } from '../../../shared/domains/own-addresses.js';
import { normalizeDomainName } from '../../../shared/mail/domain-name.js';
import { addressWarmupCap, addressWarmupDay } from '../../../shared/mail/ip-warmup.js';
import { CliError, splitList, UsageError, type Command, type Values } from '../command.js';

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const HOST = /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$/;

function poolName(raw: Values[string], flag = 'name'): string {
  const name = String(raw).trim();
  if (!NAME.test(name)) {
    throw new UsageError(`--${flag} must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit`);
  }
  return name;
}

function addresses(raw: Values[string]): string[] {
  const list = splitList(String(raw)).map(normaliseIp);
  if (list.length === 0) throw new UsageError('--ip must name at least one address');
  for (const a of list) {
    if (isIP(a) === 0) throw new UsageError(`--ip: "${a}" is not an IPv4 or IPv6 address`);
    if (a === '0.0.0.0' || a === '::')
      throw new UsageError(`--ip: "${a}" is the unspecified address, not one to send from`);
  }
  return [...new Set(list)];
}

function ehloName(raw: Values[string]): string | null {
  if (raw === undefined) return null;
  const host = String(raw).trim().toLowerCase().replace(/\.$/, '');
  if (!HOST.test(host)) throw new UsageError(`--ehlo must be a fully qualified host name, got "${String(raw)}"`);
  return host;
}

/** The pool as printed by --json: each address with its warm-up day and today's cap (null: none). */
export function poolJson(p: PoolRow, now = new Date()) {
  return {
    id: p.id,
    name: p.name,
    ehlo: p.ehlo,
    created_at: p.created_at.toISOString(),
    addresses: p.addresses.map((a) => {
      const cap = addressWarmupCap(a.warmup_started_at, now);
      return {
        address: a.address,
        warmup_started_at: a.warmup_started_at.toISOString(),
        warmup_day: addressWarmupDay(a.warmup_started_at, now),
        daily_cap: cap === Infinity ? null : cap,
      };
    }),
    assignments: p.assignments,
  };
}

function describeAssignment(a: PoolRow['assignments'][number]): string {
  if ('domain_id' in a) return `domain ${a.domain} (${a.domain_id})`;
  if ('org_id' in a) return `org ${a.org_id} (${a.org_name})`;
  return `stream ${a.stream}`;
}

function poolLines(p: PoolRow): string[] {
  const j = poolJson(p);
  const lines = [`Pool  ${p.name}  ${p.id}  EHLO ${p.ehlo ?? '(HELO_NAME)'}`];
  for (const a of j.addresses) {
    const warm = a.daily_cap === null ? 'warmed up' : `warm-up day ${a.warmup_day}, ${a.daily_cap} a day`;
    lines.push(`  address   ${a.address}  ${warm}`);
  }
  for (const a of p.assignments) lines.push(`  assigned  ${describeAssignment(a)}`);
  return lines;
}

async function requirePool(sql: Sql, name: string): Promise<PoolRow> {
  const pool = await getPoolByName(sql, name);
  if (!pool) throw new CliError(`pool ${name} not found`);
  return pool;
}

type Target = { org_id: string } | { domain_id: string } | { stream: PoolStream };

/** The one target of --org, --domain or --stream. */
async function target(sql: Sql, values: Values): Promise<Target> {
  const given = (['org', 'domain', 'stream'] as const).filter((f) => values[f] !== undefined);
  if (given.length !== 1) throw new UsageError('give exactly one of --org, --domain or --stream');
  const raw = String(values[given[0]!]).trim();
  if (given[0] === 'stream') {
    const stream = raw.toLowerCase() as PoolStream;
    if (!POOL_STREAMS.includes(stream))
      throw new UsageError(`--stream must be one of ${POOL_STREAMS.join(', ')}, got "${raw}"`);
    return { stream };
  }
  if (given[0] === 'org') {
    if (!(await getOrg(sql, raw))) throw new CliError(`organization ${raw} not found`);
    return { org_id: raw };
  }
  const ref = raw.startsWith('dom_') ? raw : (normalizeDomainName(raw) ?? raw.toLowerCase());
  const found = await findDomainsByRef(sql, ref);
  if (found.length === 0) throw new CliError(`domain ${raw} not found`);
  if (found.length > 1) {
    const ids = found.map((d) => `${d.id} (${d.org_id})`).join(', ');
    throw new CliError(`${raw} is a domain of several organizations; name one by id: ${ids}`);
  }
  return { domain_id: found[0]!.id };
}

const poolAdd: Command = {
  name: 'pool add',
  summary: 'add an IP pool, or addresses to one (each address warms up from today)',
  options: {
    name: { type: 'string', value: 'name', help: 'pool name', required: true },
    ip: { type: 'string', value: 'addr[,addr]', help: 'local address(es) to send from (IPv4 or IPv6)', required: true },
    ehlo: { type: 'string', value: 'host', help: 'name said in EHLO from these addresses (default HELO_NAME)' },
    json: { type: 'boolean', help: 'print {"pool":{…}} as JSON' },
  },
  async run(values, ctx) {
    const name = poolName(values.name);
    const ips = addresses(values.ip);
    const ehlo = ehloName(values.ehlo);
    const sql = ctx.sql();
    for (const ip of ips) {
      const holder = await poolOfAddress(sql, ip);
      if (holder && holder !== name) throw new CliError(`${ip} is already an address of pool ${holder}`);
    }
    await addPool(sql, { name, ehlo, addresses: ips });
    const pool = await requirePool(sql, name);
    if (values.json) return ctx.json({ pool: poolJson(pool) });
    for (const line of poolLines(pool)) ctx.out(line);
  },
};

const poolList: Command = {
  name: 'pool list',
  summary: 'list the IP pools with their addresses, warm-up and assignments',
  options: { json: { type: 'boolean', help: 'print {"pools":[…]} as JSON' } },
  async run(values, ctx) {
    const pools = await listPools(ctx.sql());
    if (values.json) return ctx.json({ pools: pools.map((p) => poolJson(p)) });
    if (pools.length === 0) return ctx.out('No IP pools: all mail leaves from the host’s default address.');
    for (const p of pools) for (const line of poolLines(p)) ctx.out(line);
  },
};

const poolRemove: Command = {
  name: 'pool remove',
  summary: 'remove an IP pool and its assignments (their mail falls back to the next pool or the default address)',
  options: {
    name: { type: 'string', value: 'name', help: 'pool name', required: true },
    json: { type: 'boolean', help: 'print {"pool":{…,"removed":true}} as JSON' },
  },
  async run(values, ctx) {
    const sql = ctx.sql();
    const pool = await requirePool(sql, poolName(values.name));
    await deletePool(sql, pool.id);
    if (values.json) return ctx.json({ pool: { ...poolJson(pool), removed: true } });
    ctx.out(`Pool ${pool.name} removed.`);
    for (const a of pool.assignments) ctx.out(`  no longer assigned: ${describeAssignment(a)}`);
  },
};

const targetOptions = {
  org: { type: 'string', value: 'org_id', help: 'an organization' },
  domain: { type: 'string', value: 'name|id', help: 'a domain (its id when several organizations have the name)' },
  stream: { type: 'string', value: 'transactional|broadcast', help: 'a stream' },
} as const;

const poolAssign: Command = {
  name: 'pool assign',
  summary: 'send the mail of an organization, a domain or a stream from a pool',
  options: {
    pool: { type: 'string', value: 'name', help: 'pool name', required: true },
    ...targetOptions,
    json: { type: 'boolean', help: 'print {"pool":{…}} as JSON' },
  },
  async run(values, ctx) {
    const sql = ctx.sql();
    const name = poolName(values.pool, 'pool');
    const to = await target(sql, values);
    const pool = await requirePool(sql, name);
    await assignPool(sql, pool.id, to);
    const after = await requirePool(sql, name);
    if (values.json) return ctx.json({ pool: poolJson(after) });
    for (const line of poolLines(after)) ctx.out(line);
  },
};

const poolUnassign: Command = {
  name: 'pool unassign',
  summary: 'stop sending the mail of an organization, a domain or a stream from its pool',
  options: { ...targetOptions, json: { type: 'boolean', help: 'print {"unassigned":n} as JSON' } },
  async run(values, ctx) {
    const n = await unassignPool(ctx.sql(), await target(ctx.sql(), values));
    if (values.json) return ctx.json({ unassigned: n });
    ctx.out(n > 0 ? 'Unassigned.' : 'It had no pool of its own.');
  },
};

export const poolCommands: Command[] = [poolAdd, poolList, poolRemove, poolAssign, poolUnassign];
