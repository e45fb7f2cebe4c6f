// Walks the whole permission table (shared/permissions.ts) through HTTP: every row × key tier ×
// mode × domain restriction gets the answer the row promises. Rows added later are covered
// without touching this file.
import { expect } from 'chai';
import Koa from 'koa';
import type { AddressInfo } from 'node:net';
import { authorize } from '../../api/middleware/authorize.js';
import { errorMiddleware } from '../../api/middleware/errors.js';
import { createRouter } from '../../api/router.js';
import type { ApiCustom, ApiState } from '../../api/types.js';
import { newId, ID_PREFIXES, type IdPrefix } from '../../shared/ids.js';
import { ROUTES, routeId, type RouteRule } from '../../shared/permissions.js';
import { authExpected as expected, TIERS, type Caller } from '../helpers/auth-expect.js';
import { track } from '../helpers/resources.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { request, startApi, type TestApi, type TestResponse } from '../helpers/stack.js';

const PREFIX_BY_SEGMENT: Record<string, IdPrefix> = {
  keys: 'key',
  domains: 'dom',
  emails: 'em',
  webhooks: 'wh',
  templates: 'tpl',
  suppressions: 'sup',
  contacts: 'ct',
  topics: 'top',
  segments: 'seg',
  broadcasts: 'bc',
  inbound: 'inb',
  automations: 'aut',
  events: 'evt',
  deliveries: 'dlv',
};

/** The row's path with every `:param` replaced by a well-formed id that does not exist. */
function concretePath(path: string): string {
  const parts = path.split('/');
  return parts
    .map((seg, i) => {
      if (!seg.startsWith(':')) return seg;
      const guess = PREFIX_BY_SEGMENT[parts[i - 1] ?? ''];
      const prefix = guess && (ID_PREFIXES as readonly string[]).includes(guess) ? guess : 'req';
      return newId(prefix);
    })
    .join('/');
}

function call(api: TestApi, rule: RouteRule, token: string): Promise<TestResponse> {
  const withBody = rule.method !== 'GET' && rule.method !== 'DELETE';
  return api.request(rule.method, concretePath(rule.path), { token, ...(withBody ? { body: {} } : {}) });
}

function describeAnswer(res: TestResponse): string {
  return `${res.status} ${res.text.slice(0, 200)}`;
}

describe('permission table (every row × tier × mode × restriction)', () => {
  let api: TestApi;
  let org: SeededOrg;
  const callers: Caller[] = [];

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }, { name: 'beta.test' }] });
    await setOrg(api, org.organization.id, { rate: 100000, burst: 100000, paused: false });
    for (const { permission, mode } of TIERS) {
      for (const restricted of [false, true]) {
        const k = await org.mint({ permission, mode, domains: restricted ? ['acme.test'] : [] });
        const label = `${permission} ${mode}${restricted ? ' restricted' : ''}`;
        callers.push({ label, permission, mode, restricted, token: k.token });
      }
    }
  });
  after(async () => api.close());

  it('has rows to walk', () => {
    expect(ROUTES.length).to.be.greaterThan(0);
  });

  it('answers every row as the row declares', async function () {
    this.timeout(30_000 + ROUTES.length * 2000);
    const failures: string[] = [];
    for (const rule of ROUTES) {
      for (const c of callers) {
        const want = expected(rule, c);
        const res = await call(api, rule, c.token);
        const code = res.json?.error?.code as string | undefined;
        const where = `${routeId(rule)} with ${c.label}: got ${describeAnswer(res)}`;
        if (want.status === 403) {
          if (res.status !== 403 || code !== want.code || !String(res.json.error.message).includes(want.contains)) {
            failures.push(`${where}; want 403 ${want.code} naming "${want.contains}"`);
          }
          continue;
        }
        const authAnswer =
          res.status === 401 ||
          res.status === 429 ||
          (res.status === 403 && (code === 'forbidden' || code === 'sending_paused')) ||
          (res.status === 403 && code === 'forbidden_domain' && (rule.restricted === 'allow' || !c.restricted));
        if (authAnswer || res.status >= 500) failures.push(`${where}; want the route's own answer`);
      }
      // A route answering an empty body may have changed the org (e.g. paused it): put it back.
      await setOrg(api, org.organization.id, { rate: 100000, burst: 100000, paused: false });
    }
    expect(failures, failures.join('\n')).to.deep.equal([]);
  });

  it('answers 403 sending_paused on every sending row for an allowed key of a paused org', async function () {
    const sending = ROUTES.filter((r) => r.sending);
    if (sending.length === 0) this.skip();
    await setOrg(api, org.organization.id, { rate: 100000, burst: 100000, paused: true });
    try {
      for (const rule of sending) {
        for (const c of callers.filter((x) => expected(rule, x).status === 'route')) {
          const res = await call(api, rule, c.token);
          expect(res.status, `${routeId(rule)} with ${c.label}`).to.equal(403);
          expect(res.json.error.code).to.equal('sending_paused');
        }
      }
      // Non-sending rows still answer for a paused org.
      const me = await api.request('GET', '/keys/me', { token: org.key.token });
      expect(me.status).to.equal(200);
    } finally {
      await setOrg(api, org.organization.id, { rate: 100000, burst: 100000, paused: false });
    }
  });
});

describe('order of the auth checks (401 → 429 → forbidden → forbidden_domain → sending_paused)', () => {
  let api: TestApi;
  let org: SeededOrg;
  let url: string;
  let close: () => Promise<void>;
  // The strictest rule a row can declare, so that every check can fire on one route.
  const rule: RouteRule = {
    method: 'POST',
    path: '/probe',
    tier: 'FULL',
    liveOnly: true,
    restricted: 'deny',
    sending: true,
    idempotent: false,
  };

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    const app = new Koa<ApiState, ApiCustom>();
    app.context.deps = api.deps;
    app.silent = true;
    app.use(errorMiddleware());
    const reached = (ctx: { body: unknown }): void => {
      ctx.body = { reached: true };
    };
    app.use(
      createRouter([
        { prefix: '/api', routes: [{ method: 'POST', path: '/api/probe', run: [authorize(rule), reached] }] },
      ]),
    );
    const server = app.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    close = track(`probe ${url}`, async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    });
  });
  after(async () => {
    await close();
    await api.close();
  });

  /** Empties a key's bucket with its clock in the future, so no refill happens before the call. */
  async function exhaust(keyId: string): Promise<void> {
    await api.deps.redis.hset(api.deps.redisKeys.rateLimit(keyId), 'tokens', 0, 'ts', 9e15);
  }
  async function refill(keyId: string): Promise<void> {
    await api.deps.redis.del(api.deps.redisKeys.rateLimit(keyId));
  }
  const probe = async (token?: string) => {
    const res = await request(url, 'POST', '/api/probe', token ? { token } : {});
    return { status: res.status, code: res.json?.error?.code as string | undefined, res };
  };

  it('applies each check only once every earlier one passed', async () => {
    await setOrg(api, org.organization.id, { rate: 1, burst: 1, paused: true });
    const send = await org.mint({ permission: 'SEND', mode: 'test', domains: ['acme.test'] });
    const fullTest = await org.mint({ permission: 'FULL', mode: 'test', domains: ['acme.test'] });
    const fullLive = await org.mint({ permission: 'FULL', mode: 'live', domains: ['acme.test'] });
    const open = await org.mint({ permission: 'FULL', mode: 'live' });

    // 401 before 429: a revoked key with an empty bucket is refused as unauthorized.
    const revoked = await org.mint({ permission: 'SEND', mode: 'test', domains: ['acme.test'] });
    await exhaust(revoked.id);
    await api.deps.sql`update api_keys set revoked_at = now() where id = ${revoked.id}`;
    await api.deps.auth.invalidateKey(revoked.id);
    expect(await probe(revoked.token)).to.include({ status: 401, code: 'unauthorized' });
    expect(await probe()).to.include({ status: 401, code: 'unauthorized' });

    // 429 before 403: a key failing every later check is first refused for its rate.
    await exhaust(send.id);
    const limited = await probe(send.token);
    expect(limited).to.include({ status: 429, code: 'rate_limited' });
    expect(limited.res.headers.get('retry-after')).to.match(/^[1-9]\d*$/);

    await refill(send.id);
    const tier = await probe(send.token);
    expect(tier).to.include({ status: 403, code: 'forbidden' });
    expect(tier.res.json.error.message).to.contain('FULL');

    const live = await probe(fullTest.token);
    expect(live).to.include({ status: 403, code: 'forbidden' });
    expect(live.res.json.error.message).to.contain('live key');

    expect(await probe(fullLive.token)).to.include({ status: 403, code: 'forbidden_domain' });
    await refill(open.id);
    expect(await probe(open.token)).to.include({ status: 403, code: 'sending_paused' });

    await setOrg(api, org.organization.id, { rate: 1, burst: 5, paused: false });
    await refill(open.id);
    const ok = await probe(open.token);
    expect(ok.status).to.equal(200);
    expect(ok.res.json).to.deep.equal({ reached: true });
  });
});

async function setOrg(api: TestApi, orgId: string, s: { rate: number; burst: number; paused: boolean }) {
  await api.deps.sql`
    update organizations
       set rate_limit_per_second = ${s.rate}, rate_limit_burst = ${s.burst},
           sending_paused = ${s.paused}, sending_paused_reason = ${s.paused ? 'test pause' : null}
     where id = ${orgId}`;
  await api.deps.auth.invalidateOrg(orgId);
}
