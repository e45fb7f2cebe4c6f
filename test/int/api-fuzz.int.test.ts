// Property-based tests of the JSON routes that take the most free-form input (fast-check): random
// bodies (well-formed-looking ones with values at and past their limits, any JSON, deep nesting,
// numbers past a double, lone surrogates, text that is not JSON) never get a 5xx, every 4xx is
// the API's error shape with the status of its code, and a 2xx only ever answers a body that the
// route's schema accepts. FUZZ_RUNS (runs per route) and FUZZ_SEED reproduce or widen a run.
import { expect } from 'chai';
import fc from 'fast-check';
import { bodyValidator } from '../../api/validate.js';
import { BODY_ITEM_SCHEMAS, BODY_SCHEMAS } from '../../api/schemas/registry.js';
import { ERROR_STATUS, type ErrorCode } from '../../shared/errors.js';
import { ROUTES, routeId, type RouteRule } from '../../shared/permissions.js';
import {
  batchBody,
  createWebhookBody,
  patchContactBody,
  postEventBody,
  sendEmailBody,
  updateEmailBody,
  updateWebhookBody,
  upsertContactBody,
  type FuzzTargets,
} from '../helpers/fuzz-bodies.js';
import { fuzzBodies, type FuzzBody } from '../helpers/fuzz-json.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi, type TestResponse } from '../helpers/stack.js';
import { unthrottle } from '../helpers/unthrottle.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 80);
const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);

function rule(id: string): RouteRule {
  const r = ROUTES.find((x) => routeId(x) === id);
  if (!r) throw new Error(`no route ${id}`);
  return r;
}

/** Whether the route's schema (and, for a batch, its item schema) accepts the body. */
function schemaAccepts(r: RouteRule, value: unknown): boolean {
  const check = (name: string, v: unknown): boolean => {
    try {
      bodyValidator(BODY_SCHEMAS[name]!)(v);
      return true;
    } catch {
      return false;
    }
  };
  if (!r.body || !check(r.body, value)) return false;
  const item = BODY_ITEM_SCHEMAS[r.body];
  return !item || (Array.isArray(value) && value.every((v) => check(item, v)));
}

interface Tally {
  [status: string]: number;
}

/** What is wrong with the answer to `b`, or null. */
function judge(r: RouteRule, b: FuzzBody, res: TestResponse): string | null {
  if (res.status >= 500) return 'a 5xx';
  if (res.status >= 400) {
    const code = res.json?.error?.code as ErrorCode | undefined;
    if (!code || typeof res.json.error.message !== 'string') return 'a 4xx without the error shape';
    return ERROR_STATUS[code] === res.status ? null : `${code} with status ${res.status}`;
  }
  if (res.status >= 200 && res.status < 300) {
    let value: unknown;
    try {
      // An empty body is no body: the route validates `{}` (api/validate.ts).
      value = b.text === '' ? undefined : JSON.parse(b.text);
    } catch {
      return 'a 2xx for a body that is not JSON';
    }
    return schemaAccepts(r, value) ? null : 'a 2xx for a body the schema refuses';
  }
  return `status ${res.status}`;
}

describe('fuzzing the JSON routes (fast-check: never a 5xx, 2xx only for schema-valid bodies)', () => {
  let api: TestApi;
  let org: SeededOrg;
  let t: FuzzTargets;
  let scheduled: string;
  let webhook: string;
  const tallies: Record<string, Tally> = {};

  before(async () => {
    api = await startApi({ env: { WEBHOOK_ALLOW_PRIVATE: 'false' } });
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'fuzz.test' }] });
    await unthrottle(api, org.organization.id);
    const post = async (path: string, body: unknown) => {
      const res = await api.request('POST', path, { token: org.key.token, body });
      if (res.status >= 300) throw new Error(`${path}: ${res.status} ${res.text}`);
      return res.json.id as string;
    };
    const template = await post('/templates', { name: 'Fuzz', slug: 'fuzz', subject: 'Hi', text: 'Hello' });
    await post(`/templates/${template}/publish`, {});
    t = {
      domain: 'fuzz.test',
      template,
      topic: await post('/topics', { name: 'Fuzz', default_subscription: 'opt_in' }),
      contact: await post('/contacts', { email: 'fuzz@example.com' }),
    };
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString();
    scheduled = await post('/emails', {
      from: 'hello@fuzz.test',
      to: 'a@example.com',
      subject: 'x',
      text: 'x',
      scheduled_at: tomorrow,
    });
    webhook = await post('/webhooks', { url: 'https://hooks.example.com/fuzz' });
  });
  after(async () => api.close());

  async function fuzz(id: string, path: () => string, shaped: fc.Arbitrary<unknown>, fields: string[]) {
    const r = rule(id);
    const tally: Tally = (tallies[id] = {});
    const property = fc.asyncProperty(fuzzBodies(shaped, fields), fc.boolean(), async (b, idempotent) => {
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (idempotent && r.idempotent) headers['idempotency-key'] = `fuzz-${Math.random()}`;
      const res = await api.request(r.method, path(), { token: org.key.token, raw: b.text, headers });
      tally[res.status] = (tally[res.status] ?? 0) + 1;
      const wrong = judge(r, b, res);
      if (wrong) throw new Error(`${id}: ${wrong}; got ${res.status} ${res.text.slice(0, 300)}`);
    });
    await fc.assert(property, { numRuns: RUNS, ...(SEED === undefined ? {} : { seed: SEED }) });
    // The runs reached the handlers' own checks, not only the parser's.
    expect(
      Object.keys(tally).some((s) => s === '422' || s === '409'),
      JSON.stringify(tally),
    ).to.equal(true);
  }

  const EMAIL_FIELDS = ['to', 'from', 'subject', 'headers', 'tags', 'template', 'attachments', 'html'];

  it('POST /emails', async function () {
    this.timeout(120_000);
    await fuzz('POST /emails', () => '/emails', sendEmailBody(t), EMAIL_FIELDS);
  });

  it('POST /emails/batch', async function () {
    this.timeout(120_000);
    await fuzz('POST /emails/batch', () => '/emails/batch', batchBody(t), EMAIL_FIELDS);
  });

  it('PATCH /emails/{id}', async function () {
    this.timeout(120_000);
    await fuzz('PATCH /emails/:id', () => `/emails/${scheduled}`, updateEmailBody, ['scheduled_at']);
  });

  it('POST /contacts', async function () {
    this.timeout(120_000);
    await fuzz('POST /contacts', () => '/contacts', upsertContactBody(t), ['email', 'properties', 'topics']);
  });

  it('PATCH /contacts/{id}', async function () {
    this.timeout(120_000);
    await fuzz('PATCH /contacts/:id', () => `/contacts/${t.contact}`, patchContactBody(t), [
      'properties',
      'first_name',
    ]);
  });

  it('POST /webhooks', async function () {
    this.timeout(120_000);
    await fuzz('POST /webhooks', () => '/webhooks', createWebhookBody, ['url', 'events', 'description']);
  });

  it('PATCH /webhooks/{id}', async function () {
    this.timeout(120_000);
    await fuzz('PATCH /webhooks/:id', () => `/webhooks/${webhook}`, updateWebhookBody, ['url', 'events', 'status']);
  });

  it('POST /events (free-form properties)', async function () {
    this.timeout(120_000);
    await fuzz('POST /events', () => '/events', postEventBody(t), ['properties', 'name', 'email']);
  });

  it('saw both accepted and refused bodies on the creating routes', () => {
    for (const id of ['POST /emails', 'POST /contacts', 'POST /webhooks']) {
      const statuses = Object.keys(tallies[id] ?? {});
      expect(
        statuses.some((s) => s.startsWith('2')),
        `${id} ${JSON.stringify(tallies[id])}`,
      ).to.equal(true);
    }
  });
});
