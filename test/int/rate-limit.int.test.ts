// The per-key token bucket (DESIGN §9) through HTTP: exact burst under concurrency, honest
// Retry-After, RateLimit-* headers on every authenticated answer, org-configurable; and the
// leases of high limits, which must never admit more than the one bucket holds.
import { expect } from 'chai';
import { leaseSize, RateLimiter, type Bucket } from '../../shared/rate-limit.js';
import { createRedis, type Redis } from '../../shared/redis.js';
import { track } from '../helpers/resources.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { expectError, startApi, type TestApi, type TestResponse } from '../helpers/stack.js';
import { sleep } from '../helpers/wait.js';
import { setRateLimit } from '../helpers/unthrottle.js';

const RATE = 1; // tokens per second: the smallest the schema allows, so the burst stays exact
const BURST = 10;

describe('rate limit', () => {
  let api: TestApi;
  let org: SeededOrg;

  async function configure(rate: number, burst: number): Promise<void> {
    await setRateLimit(api, org.organization.id, rate, burst);
  }

  async function burst(token: string, n: number): Promise<TestResponse[]> {
    return await Promise.all(Array.from({ length: n }, () => api.request('GET', '/keys/me', { token })));
  }

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    await configure(RATE, BURST);
  });
  after(async () => api.close());

  it('lets exactly `burst` concurrent requests through, then answers 429 with Retry-After', async () => {
    const k = await org.mint({ permission: 'SEND' });
    // Fired at once: the Lua script must hand out each token once, whatever the interleaving.
    const answers = await burst(k.token, BURST + 6);
    const passed = answers.filter((r) => r.status === 200);
    const refused = answers.filter((r) => r.status === 429);
    expect(passed).to.have.length(BURST);
    expect(refused).to.have.length(6);
    for (const r of refused) {
      expect(r.json.error.code).to.equal('rate_limited');
      expect(r.headers.get('retry-after')).to.match(/^[1-9]\d*$/);
      expect(r.headers.get('ratelimit-remaining')).to.equal('0');
    }
    const remaining = passed.map((r) => Number(r.headers.get('ratelimit-remaining'))).sort((x, y) => x - y);
    expect(remaining).to.deep.equal(Array.from({ length: BURST }, (_, i) => i));
  });

  it('keeps the buckets of two keys apart', async () => {
    const a = await org.mint({ permission: 'SEND' });
    const b = await org.mint({ permission: 'SEND' });
    await burst(a.token, BURST + 2);
    expectError(await api.request('GET', '/keys/me', { token: a.token }), 429, 'rate_limited');
    const other = await api.request('GET', '/keys/me', { token: b.token });
    expect(other.status).to.equal(200);
    expect(other.headers.get('ratelimit-remaining')).to.equal(String(BURST - 1));
  });

  it('tells the truth in Retry-After: waiting it lets the next request through', async () => {
    const k = await org.mint({ permission: 'SEND' });
    await burst(k.token, BURST);
    const refused = await api.request('GET', '/keys/me', { token: k.token });
    expectError(refused, 429, 'rate_limited');
    const wait = Number(refused.headers.get('retry-after'));
    expect(wait).to.be.at.least(1);
    await sleep(wait * 1000);
    const next = await api.request('GET', '/keys/me', { token: k.token });
    expect(next.status, next.text).to.equal(200);
  });

  it('sends RateLimit-* headers on every authenticated answer, errors included', async () => {
    await configure(100, 1000);
    try {
      const send = await org.mint({ permission: 'SEND' });
      const answers = [
        await api.request('GET', '/keys/me', { token: org.key.token }), // 200
        await api.request('GET', '/keys', { token: send.token }), // 403 forbidden
        await api.request('GET', '/keys/key_01ARZ3NDEKTSV4RRFFQ69G5FAV', { token: org.key.token }), // 404
        await api.request('POST', '/keys', { token: org.key.token, body: { name: 1 } }), // 422
        await api.request('POST', '/keys', { token: org.key.token, raw: '{bad', headers: ct }), // 400
      ];
      expect(answers.map((r) => r.status)).to.deep.equal([200, 403, 404, 422, 400]);
      for (const r of answers) {
        expect(r.headers.get('ratelimit-limit'), r.text).to.equal('1000');
        expect(r.headers.get('ratelimit-remaining')).to.match(/^\d+$/);
        expect(r.headers.get('ratelimit-reset')).to.match(/^\d+$/);
      }
    } finally {
      await configure(RATE, BURST);
    }
  });

  it('applies a new burst configured for the organization', async () => {
    await configure(RATE, 3);
    try {
      const k = await org.mint({ permission: 'SEND' });
      const answers = await burst(k.token, 6);
      expect(answers.filter((r) => r.status === 200)).to.have.length(3);
      expect(answers.filter((r) => r.status === 429)).to.have.length(3);
      expect(answers[0]!.headers.get('ratelimit-limit')).to.equal('3');
    } finally {
      await configure(RATE, BURST);
    }
  });
});

const ct = { 'content-type': 'application/json' };

describe('rate limit leases (high limits)', () => {
  let api: TestApi;
  // The limiters' own client, without the web process's 2 s command timeout: thousands of takes
  // fired at once from this one process may wait longer than that on a loaded machine, and what
  // these tests check is the bucket's arithmetic, not Redis's latency.
  let redis: Redis;
  let closeRedis: () => Promise<void>;
  before(async () => {
    api = await startApi();
    redis = createRedis(api.config.redisUrl, 'bullmq', 'rate-limit-test');
    new RateLimiter(redis, api.deps.redisKeys.rateLimit); // defines the Lua command on the client
    closeRedis = track('rate-limit test redis', async () => void (await redis.quit()));
  });
  after(async () => {
    await closeRedis();
    await api.close();
  });

  /** A limiter as one web process has it, counting (and optionally failing) its Redis calls. */
  function processLimiter(fail?: Error): { limiter: RateLimiter; calls: () => number; windows: Set<number> } {
    const real = redis;
    let n = 0;
    const windows = new Set<number>();
    const counting = Object.create(real) as Redis;
    counting.ternTokenBucket = async (...args: Parameters<Redis['ternTokenBucket']>) => {
      n++;
      windows.add(args[5]);
      if (fail) {
        await sleep(20);
        throw fail;
      }
      return await real.ternTokenBucket(...args);
    };
    return { limiter: new RateLimiter(counting, api.deps.redisKeys.rateLimit), calls: () => n, windows };
  }

  it('leases nothing at the default limit and at most 50 ms of refill (a tenth of the burst) at high limits', () => {
    expect(leaseSize({ perSecond: 10, burst: 20 })).to.equal(0);
    expect(leaseSize({ perSecond: 39, burst: 1000 })).to.equal(0);
    expect(leaseSize({ perSecond: 1000, burst: 5000 })).to.equal(50);
    expect(leaseSize({ perSecond: 100000, burst: 100000 })).to.equal(5000);
    expect(leaseSize({ perSecond: 100000, burst: 50 })).to.equal(5);
  });

  it('refills the bucket only up to the burst minus the tokens leased in the last two windows', async () => {
    const key = api.deps.redisKeys.rateLimit(`lease-cap-${Date.now()}`);
    const bucket = async (cost: number, lease: number) =>
      await api.deps.redis.ternTokenBucket(key, 100000, 1000, cost, lease, 100);
    const [allowed, , , , granted] = await bucket(1, 100);
    expect([allowed, granted]).to.deep.equal([1, 100]);
    await sleep(20); // 2,000 tokens of refill: the bucket is full…
    const [whole] = await bucket(1000, 0);
    expect(whole, 'the whole burst while 100 tokens are leased').to.equal(0); // …at 900
    const [rest, remaining] = await bucket(900, 0);
    expect([rest, remaining]).to.deep.equal([1, 0]);
    await sleep(250); // two windows later the lease has ended
    const [again] = await bucket(1000, 0);
    expect(again).to.equal(1);
  });

  it('keeps at most half the burst out on lease, so busy leasing cannot starve the refill', async () => {
    const key = api.deps.redisKeys.rateLimit(`lease-budget-${Date.now()}`);
    let granted = 0;
    for (let i = 0; i < 20; i++) {
      const [allowed, , , , g] = await api.deps.redis.ternTokenBucket(key, 1000, 1000, 1, 100, 60000);
      expect(allowed).to.equal(1);
      granted += g!;
    }
    expect(granted).to.equal(500);
  });

  it('admits no more than the bucket holds across two processes firing at once', async () => {
    const bucket: Bucket = { perSecond: 1000, burst: 5000 };
    const a = processLimiter();
    const b = processLimiter();
    const id = `lease-${Date.now()}`;
    const started = Date.now();
    const results = await Promise.all(Array.from({ length: 7000 }, (_, i) => (i % 2 ? a : b).limiter.take(id, bucket)));
    const elapsed = Date.now() - started;
    const admitted = results.filter((r) => r.allowed).length;
    const refill = Math.ceil((elapsed * bucket.perSecond) / 1000) + 1;
    expect(admitted, `elapsed ${elapsed} ms`).to.be.at.most(bucket.burst + refill);
    // Leases left unspent withhold a little: at most one lease per process.
    expect(admitted).to.be.at.least(bucket.burst - 2 * leaseSize(bucket));

    for (const r of results.filter((x) => !x.allowed)) expect(r.retryAfterSeconds).to.be.at.least(1);
    // Calls without a lease of their own (after two rounds of waiting) honour the others' leases.
    expect([...a.windows, ...b.windows].every((w) => w > 0)).to.equal(true);
  });

  it('serves a steady stream of requests mostly from leases', async () => {
    const bucket: Bucket = { perSecond: 100000, burst: 100000 };
    const p = processLimiter();
    const id = `lease-steady-${Date.now()}`;
    for (let i = 0; i < 5000; i++) expect((await p.limiter.take(id, bucket)).allowed).to.equal(true);
    // Every call admits its request and a lease of at least 8 (growing to 5,000) unless the
    // lease's 50 ms ran out first (a pause of the event loop): a few calls of slack for those.
    expect(p.calls()).to.be.at.most(Math.ceil(5000 / 9) + 20);
    expect(p.calls()).to.be.below(100);
  });

  it('sizes the next lease for the requests that waited on the last one', async () => {
    const bucket: Bucket = { perSecond: 100000, burst: 100000 };
    const p = processLimiter();
    const id = `lease-wait-${Date.now()}`;
    const results = await Promise.all(Array.from({ length: 50 }, () => p.limiter.take(id, bucket)));
    expect(results.every((r) => r.allowed)).to.equal(true);
    // The first call leases 8; the 41 requests still waiting then share one lease.
    expect(p.calls()).to.equal(2);
  });

  it('gives the requests waiting on a lease the Redis failure, after one call', async () => {
    const down = Object.assign(new Error('Connection is closed.'), { code: 'ECONNREFUSED' });
    const p = processLimiter(down);
    const bucket: Bucket = { perSecond: 100000, burst: 100000 };
    const settled = await Promise.allSettled(Array.from({ length: 20 }, () => p.limiter.take('lease-down', bucket)));
    expect(settled.every((r) => r.status === 'rejected' && r.reason === down)).to.equal(true);
    expect(p.calls()).to.equal(1);
  });

  it('spends a lease only under the limits it was taken with', async () => {
    const p = processLimiter();
    const id = `lease-change-${Date.now()}`;
    const high: Bucket = { perSecond: 1000, burst: 5000 };
    expect((await p.limiter.take(id, high)).allowed).to.equal(true);
    expect(p.calls()).to.equal(1);
    expect((await p.limiter.take(id, high)).allowed).to.equal(true);
    expect(p.calls()).to.equal(1); // from the lease
    const low: Bucket = { perSecond: 1, burst: 3 };
    const r = await p.limiter.take(id, low);
    expect(p.calls()).to.equal(2); // the new limits go to Redis
    expect(r.limit).to.equal(3);
    expect(r.remaining).to.be.at.most(2);
  });
});
