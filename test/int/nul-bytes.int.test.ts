// NUL characters never reach Postgres (which refuses them in text and jsonb): every route of the
// permission table is called with NUL in each string its body schema, its query schema and its
// path accept (derived from the schemas, so a new route is covered as soon as it is registered),
// and answers 422 validation_error naming the field, never a 5xx. Label-like fields refuse every
// control character; text bodies keep their line breaks.
import { expect } from 'chai';
import { BODY_ITEM_SCHEMAS, BODY_SCHEMAS, QUERY_SCHEMAS } from '../../api/schemas/registry.js';
import { ROUTES, routeId, type RouteRule } from '../../shared/permissions.js';
import { samples, type Sample } from '../helpers/schema-samples.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi, type TestResponse } from '../helpers/stack.js';
import { unthrottle } from '../helpers/unthrottle.js';

const NUL = 'a\u0000b';

/** The route's path with every parameter a harmless value, or `nul` for the one named. */
function pathOf(rule: RouteRule, nul?: string): string {
  return rule.path.replace(/:(\w+)/g, (_, name: string) => (name === nul ? 'a%00b' : 'x1'));
}

function unique(list: Sample[]): Sample[] {
  const seen = new Set<string>();
  return list.filter((s) => {
    const id = `${s.key ? 'key:' : ''}${s.path}`;
    return seen.has(id) ? false : (seen.add(id), true);
  });
}

function expectRefused(res: TestResponse, field: string, what: string): void {
  expect(res.status, `${what}: ${res.text}`).to.equal(422);
  expect(res.json.error.code, what).to.equal('validation_error');
  expect(res.json.error.message, what).to.contain(field);
}

describe('text in requests', () => {
  let api: TestApi;
  let org: SeededOrg;

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    await unthrottle(api, org.organization.id);
  });
  after(async () => api.close());

  const call = (method: string, path: string, body?: unknown) =>
    api.request(method, path, { token: org.key.token, ...(body !== undefined ? { body } : {}) });

  describe('NUL characters', () => {
    for (const rule of ROUTES.filter((r) => r.body)) {
      it(`${routeId(rule)}: 422 naming each body field that holds NUL`, async () => {
        const item = BODY_ITEM_SCHEMAS[rule.body!];
        const schema = BODY_SCHEMAS[item ?? rule.body!] as Record<string, unknown>;
        const list = unique(samples(schema, NUL));
        expect(list.length).to.be.greaterThan(0);
        for (const s of list) {
          // A batch validates item by item and names the index.
          const where = item ? `body[0]${s.path}` : `body${s.path}`;
          const res = await call(rule.method, pathOf(rule), item ? [s.value] : s.value);
          // Checked before the route looks anything up: the made-up path ids do not matter.
          expectRefused(res, s.key ? `${where} has a key with a NUL` : `${where} must not contain a NUL`, where);
        }
      });
    }

    for (const rule of ROUTES.filter((r) => r.query)) {
      it(`${routeId(rule)}: 422 naming each query parameter that holds NUL`, async () => {
        const props = Object.keys((QUERY_SCHEMAS[rule.query!] as { properties: object }).properties);
        for (const name of [...props, 'unknown']) {
          const res = await call(rule.method, `${pathOf(rule)}?${name}=a%00b`);
          expectRefused(res, `query.${name} must not contain a NUL`, name);
        }
        expectRefused(await call(rule.method, `${pathOf(rule)}?a%00=1`), 'query has a key with a NUL', 'a key');
      });
    }

    for (const rule of ROUTES.filter((r) => r.path.includes(':'))) {
      it(`${routeId(rule)}: 422 naming each path parameter that holds NUL`, async () => {
        for (const [, name] of rule.path.matchAll(/:(\w+)/g)) {
          const body = rule.method === 'GET' || rule.method === 'DELETE' ? undefined : {};
          const res = await call(rule.method, pathOf(rule, name), body);
          expectRefused(res, `path.${name} must not contain a NUL`, `${routeId(rule)} :${name}`);
        }
      });
    }

    it('answers GET /suppressions/a%40b%00.c with 422, not 500', async () => {
      expectRefused(await call('GET', '/suppressions/a%40b%00.c'), 'path.id', 'suppression');
    });

    it('names the field of the reported cases: subject, text, kind, a property key and value', async () => {
      const send = { from: 'hello@acme.test', to: 'ann@example.net', subject: 'Hi', text: 'x' };
      for (const [body, field] of [
        [{ ...send, subject: NUL }, 'body.subject'],
        [{ ...send, text: NUL }, 'body.text'],
        [{ ...send, kind: NUL }, 'body.kind'],
      ] as const) {
        expectRefused(await call('POST', '/emails', body), field, field);
      }
      const event = { name: 'signed_up', email: 'ann@example.net' };
      expectRefused(
        await call('POST', '/events', { ...event, properties: { [NUL]: 1 } }),
        'body.properties has a key',
        'key',
      );
      expectRefused(
        await call('POST', '/events', { ...event, properties: { plan: { tier: NUL } } }),
        'body.properties.plan.tier',
        'value',
      );
      const contact = { email: 'ann@example.net', properties: { city: NUL } };
      expectRefused(await call('POST', '/contacts', contact), 'body.properties.city', 'contact');
    });
  });

  describe('control characters in label-like fields', () => {
    it('gives every `kind` and `name` of every request schema the label format', () => {
      const found: string[] = [];
      const visit = (s: unknown, at: string): void => {
        if (typeof s !== 'object' || s === null) return;
        for (const [k, v] of Object.entries(s)) {
          if (k === 'properties' && typeof v === 'object' && v !== null) {
            for (const [name, sub] of Object.entries(v)) {
              const str = JSON.stringify(sub);
              if ((name === 'kind' || name === 'name') && str.includes('"string"')) {
                found.push(`${at}.${name}`);
                // The label format, or a pattern of its own that refuses controls (tag names).
                const pattern = (sub as { pattern?: string }).pattern;
                const refuses =
                  pattern !== undefined && ['a\nb', 'a\tb', 'a\u0001b'].every((x) => !new RegExp(pattern, 'u').test(x));
                expect(str.includes('"format":"label"') || refuses, `${at}.${name}: ${str}`).to.equal(true);
              }
            }
          }
          visit(v, `${at}.${k}`);
        }
      };
      for (const [name, schema] of Object.entries({ ...BODY_SCHEMAS, ...QUERY_SCHEMAS })) visit(schema, name);
      expect(found.length).to.be.greaterThan(10);
    });

    it('refuses CR, LF, TAB and other controls in kind, names and the pause reason (422 naming the field)', async () => {
      const send = { from: 'hello@acme.test', to: 'ann@example.net', subject: 'Hi', text: 'x' };
      const cases: [string, string, unknown, string][] = [
        ['POST', '/emails', { ...send, kind: 'receipt\r\nX-Evil: 1' }, 'body.kind'],
        ['POST', '/emails', { ...send, kind: 'a\tb' }, 'body.kind'],
        ['POST', '/emails/batch', [{ ...send, kind: 'a\u001bb' }], 'body[0].kind'],
        ['POST', '/keys', { name: 'ci\rkey', permission: 'SEND' }, 'body.name'],
        ['POST', '/topics', { name: 'news\u007f', default_subscription: 'opt_in' }, 'body.name'],
        ['PATCH', '/organization', { sending_paused_reason: 'spam\r\n250 ok' }, 'body.sending_paused_reason'],
      ];
      for (const [method, path, body, field] of cases) {
        const res = await call(method, path, body);
        expectRefused(res, `${field} must not contain control characters`, `${method} ${path} ${field}`);
      }
      // An event name has its own pattern (no leading or trailing space) that refuses a line break first.
      expectRefused(
        await call('POST', '/events', { name: 'a\u0001b', email: 'ann@example.net' }),
        'body.name must not contain control',
        'event',
      );
      expectRefused(
        await call('POST', '/events', { name: 'signed\nup', email: 'ann@example.net' }),
        'body.name',
        'event',
      );
      // Tags keep their own stricter pattern (A-Z a-z 0-9 _ -).
      expectRefused(
        await call('POST', '/emails', { ...send, tags: [{ name: 'a\nb', value: 'c' }] }),
        'body.tags.0.name',
        'tag',
      );
      const list = await call('GET', '/emails?kind=a%0Ab');
      expectRefused(list, 'query.kind must not contain control characters', 'GET /emails?kind');
    });

    it('keeps line breaks and tabs in text bodies and subjects', async () => {
      const res = await call('POST', '/emails', {
        from: 'hello@acme.test',
        to: 'ann@example.net',
        subject: 'Hi\tthere',
        text: 'line one\r\nline two\n\tindented',
        html: '<p>a</p>\n<p>b</p>',
        kind: 'receipt',
      });
      expect(res.status, res.text).to.equal(200);
      const [row] = await api.deps.sql<{ text: string }[]>`select text from emails where id = ${res.json.id}`;
      expect(row!.text).to.equal('line one\r\nline two\n\tindented');
    });
  });
});
