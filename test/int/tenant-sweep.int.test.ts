// The cross-tenant sweep: organization A owns one resource of every kind (test/helpers/
// tenant-world.ts); every row of the permission table is called as test/helpers/tenant-sweep.ts
// says, aimed at A's resources, with organization B's keys of every tier and mode, and with A's
// keys restricted to one domain aimed at A's other domain. Nothing of A may be shown (no id, no
// secret in any answer), answered (404 for a foreign id, a 4xx for a foreign reference) or
// changed (A's rows and A's own reads of them are the same before and after).
import { expect } from 'chai';
import type { Sql } from '../../shared/db/pool.js';
import { ROUTES, routeId, type RouteRule } from '../../shared/permissions.js';
import { authExpected, TIERS, type Caller } from '../helpers/auth-expect.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi, type TestResponse } from '../helpers/stack.js';
import { SWEEP, type SweepCall } from '../helpers/tenant-sweep.js';
import { buildResourceSet, DOMAIN_BOUND, type ResourceSet } from '../helpers/tenant-world.js';
import { unthrottle } from '../helpers/unthrottle.js';
import { unsafeParams } from '../../shared/db/params.js';

interface Sweep {
  callers: Caller[];
  victim: ResourceSet;
  own: ResourceSet;
  /** Strings no answer may contain unless the request itself did. */
  secrets: string[];
  /** Which calls of each entry to make. */
  pick(call: SweepCall): boolean;
  /** A restricted key of the victim's own organization may be refused with 403 forbidden_domain. */
  sameOrg: boolean;
}

function send(api: TestApi, rule: RouteRule, call: SweepCall, token: string): Promise<TestResponse> {
  if (call.csv !== undefined) {
    return api.request(rule.method, call.path, { token, raw: call.csv, headers: { 'content-type': 'text/csv' } });
  }
  const body = rule.method === 'GET' || rule.method === 'DELETE' ? undefined : (call.body ?? {});
  return api.request(rule.method, call.path, { token, ...(body !== undefined ? { body } : {}) });
}

/** What is wrong with one answer, or null. */
function judge(rule: RouteRule, call: SweepCall, c: Caller, res: TestResponse, s: Sweep): string | null {
  const code = res.json?.error?.code as string | undefined;
  if (res.status >= 500) return 'a 5xx';
  const asked = call.path + JSON.stringify(call.body ?? null) + (call.csv ?? '');
  const shown = s.secrets.find((x) => !asked.includes(x) && res.text.includes(x));
  if (shown) return `shows the victim's ${shown}`;
  const auth = authExpected(rule, c);
  if (auth.status === 403) return res.status === 403 && code === auth.code ? null : `want 403 ${auth.code}`;
  if (res.status === 401 || res.status === 429) return 'an auth answer for a key that passes it';
  switch (call.expect) {
    case 'not_found':
      if (res.status === 404 && code === 'not_found') return null;
      return s.sameOrg && res.status === 403 && code === 'forbidden_domain' ? null : 'want 404 not_found';
    case 'refused':
      return res.status >= 400 && res.status < 500 ? null : 'want a 4xx refusal';
    case 'own':
      return null;
  }
}

async function runSweep(api: TestApi, s: Sweep): Promise<{ calls: number; failures: string[] }> {
  const failures: string[] = [];
  let calls = 0;
  for (const rule of ROUTES) {
    const entry = SWEEP[routeId(rule)];
    if (!entry) continue; // reported by the coverage test
    for (const call of entry(s.victim, s.own).filter((x) => s.pick(x))) {
      for (const c of s.callers) {
        const res = await send(api, rule, call, c.token);
        calls++;
        const wrong = judge(rule, call, c, res, s);
        if (wrong) {
          failures.push(
            `${rule.method} ${call.path} with ${c.label}: ${wrong}; got ${res.status} ${res.text.slice(0, 200)}`,
          );
        }
      }
    }
  }
  return { calls, failures };
}

/** The victim's own reads (its ADMIN key) of what `pick` selects of the GET rows' calls. */
async function readBack(api: TestApi, token: string, v: ResourceSet, pick: (c: SweepCall) => boolean) {
  const seen: Record<string, string> = {};
  for (const rule of ROUTES.filter((r) => r.method === 'GET')) {
    for (const call of SWEEP[routeId(rule)]?.(v, v).filter(pick) ?? []) {
      const res = await api.request('GET', call.path, { token });
      seen[call.path] = `${res.status} ${res.text}`;
    }
  }
  return seen;
}

/**
 * Every row, in every table, that `where` selects (a column that any use of a key touches left out,
 * and the request log, which every request of the victim's own keys adds to).
 */
async function snapshot(sql: Sql, where: { orgId: string } | { ids: string[]; domainId: string }) {
  const cols = await sql<{ table_name: string; column_name: string }[]>`
    select table_name, column_name from information_schema.columns
    where table_schema = 'public' and column_name in ('org_id', 'id', 'domain_id')`;
  const byTable = new Map<string, Set<string>>();
  for (const c of cols) byTable.set(c.table_name, (byTable.get(c.table_name) ?? new Set()).add(c.column_name));
  const out: Record<string, string[]> = {};
  for (const [table, has] of [...byTable].sort(([x], [y]) => x.localeCompare(y))) {
    const conds: string[] = [];
    const params: (string | string[])[] = [];
    if ('orgId' in where) {
      if (has.has('org_id')) conds.push(`org_id = $${params.push(where.orgId)}`);
    } else {
      if (has.has('id')) conds.push(`id::text = any($${params.push(where.ids)})`);
      if (has.has('domain_id')) conds.push(`domain_id = $${params.push(where.domainId)}`);
    }
    if (conds.length === 0 || table === 'request_logs') continue;
    const rows = await sql.unsafe<{ row: string }[]>(
      `select (to_jsonb(t) - 'last_used_at')::text as row from "${table}" t where ${conds.join(' or ')} order by 1`,
      unsafeParams(params),
    );
    out[table] = rows.map((r) => r.row);
  }
  return out;
}

describe('cross-tenant sweep (every row of the permission table, every tier of key)', () => {
  let api: TestApi;
  let a: SeededOrg;
  let b: SeededOrg;
  let a1: ResourceSet;
  let a2: ResourceSet;
  let bOwn: ResourceSet;

  async function callers(org: SeededOrg, domains: string[], label: string): Promise<Caller[]> {
    const out: Caller[] = [];
    for (const { permission, mode } of TIERS) {
      const k = await org.mint({ permission, mode, domains });
      out.push({
        label: `${label} ${permission} ${mode}`,
        permission,
        mode,
        restricted: domains.length > 0,
        token: k.token,
      });
    }
    return out;
  }

  before(async function () {
    this.timeout(120_000);
    api = await startApi();
    a = await seedOrg(api.deps.sql, { domains: [{ name: 'a-one.test' }, { name: 'a-two.test' }] });
    b = await seedOrg(api.deps.sql, { domains: [{ name: 'b-one.test' }] });
    await unthrottle(api, a.organization.id);
    await unthrottle(api, b.organization.id);
    a1 = await buildResourceSet(api, a, 'a-one.test');
    a2 = await buildResourceSet(api, a, 'a-two.test');
    bOwn = await buildResourceSet(api, b, 'b-one.test');
  });
  after(async () => api.close());

  it('has an entry for every row of the permission table and none for a missing row', () => {
    const rows = ROUTES.map(routeId).sort();
    const missing = rows.filter((id) => !SWEEP[id]);
    expect(missing, `rows without a sweep entry in test/helpers/tenant-sweep.ts: ${missing.join(', ')}`).to.deep.equal(
      [],
    );
    expect(Object.keys(SWEEP).sort()).to.deep.equal(rows);
    // Every entry aims at least one call at a resource of the victim or reads a list.
    for (const id of rows) expect(SWEEP[id]!(a1, bOwn), id).to.not.be.empty;
  });

  it("neither shows, answers nor changes anything of another organization's", async function () {
    this.timeout(600_000);
    const all = (): boolean => true;
    const victimIds = [a1, a2].flatMap((set) => Object.values(set)).filter((x) => /^[a-z]+_[0-9A-Z]{26}$/.test(x));
    const secrets = [...victimIds, a1.keyToken, a1.webhookSecret, a2.keyToken, a2.webhookSecret, a.key.token];
    const before = await readBack(api, a.key.token, a1, all);
    const rows = await snapshot(api.deps.sql, { orgId: a.organization.id });
    const sweep: Sweep = {
      callers: await callers(b, [], 'B'),
      victim: a1,
      own: bOwn,
      secrets,
      pick: all,
      sameOrg: false,
    };
    const { calls, failures } = await runSweep(api, sweep);
    expect(failures, failures.join('\n')).to.deep.equal([]);
    expect(calls).to.be.greaterThan(ROUTES.length * TIERS.length);
    expect(await snapshot(api.deps.sql, { orgId: a.organization.id })).to.deep.equal(rows);
    expect(await readBack(api, a.key.token, a1, all)).to.deep.equal(before);
  });

  it("neither shows, answers nor changes another domain's with keys restricted to one domain", async function () {
    this.timeout(600_000);
    const bound = DOMAIN_BOUND.map((k) => a2[k] as string);
    const aimed = (c: SweepCall): boolean => c.bound === true;
    const before = await readBack(api, a.key.token, a2, (c) => aimed(c) && c.expect === 'not_found');
    const where = { ids: Object.values(a2).filter((x) => typeof x === 'string') as string[], domainId: a2.domain };
    const rows = await snapshot(api.deps.sql, where);
    const sweep: Sweep = {
      callers: await callers(a, ['a-one.test'], 'A restricted to a-one.test'),
      victim: a2,
      own: a1,
      secrets: [...bound, a2.keyToken],
      pick: (c) => aimed(c) || c.expect === 'own',
      sameOrg: true,
    };
    const { failures } = await runSweep(api, sweep);
    expect(failures, failures.join('\n')).to.deep.equal([]);
    expect(await snapshot(api.deps.sql, where)).to.deep.equal(rows);
    expect(await readBack(api, a.key.token, a2, (c) => aimed(c) && c.expect === 'not_found')).to.deep.equal(before);
  });

  it("keeps an upsert of another organization's address in the caller's organization", async () => {
    const rows = await snapshot(api.deps.sql, { orgId: a.organization.id });
    const contact = await api.request('POST', '/contacts', {
      token: b.key.token,
      body: { email: a1.contactEmail, first_name: 'Mallory', unsubscribed: true },
    });
    expect(contact.status).to.equal(201);
    expect(contact.json.id).to.not.equal(a1.contact);
    const suppression = await api.request('POST', '/suppressions', {
      token: b.key.token,
      body: { email: a1.suppressedEmail },
    });
    expect(suppression.status).to.equal(201);
    expect(suppression.json.id).to.not.be.oneOf([a1.suppression, a1.orgSuppression]);
    const event = await api.request('POST', '/events', {
      token: b.key.token,
      body: { name: 'x', email: a1.contactEmail },
    });
    expect(event.status).to.equal(202);
    expect(event.json.contact_id).to.equal(contact.json.id);
    // A domain verified by A may be added by B (it stays pending: verifying it is refused).
    const domain = await api.request('POST', '/domains', { token: b.key.token, body: { name: a1.domainName } });
    expect(domain.status).to.equal(201);
    expect(domain.json).to.include({ name: a1.domainName, status: 'pending' });
    expect(domain.json.id).to.not.equal(a1.domain);
    expect(await snapshot(api.deps.sql, { orgId: a.organization.id })).to.deep.equal(rows);
    const mine = await api.request('GET', `/contacts/${encodeURIComponent(a1.contactEmail)}`, { token: a.key.token });
    expect(mine.json).to.include({ id: a1.contact, first_name: 'Reader', unsubscribed: false });
  });
});
