// The error contract through HTTP: one shape {"error":{"code","message"}} for every failure,
// hidden 5xx messages, 503 (never a hang) when Postgres or Redis is down, health endpoints.
import { expect } from 'chai';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from '../../api/app.js';
import { MAX_DEPTH as MAX_BODY_DEPTH } from '../../api/text-checks.js';
import { allHandlers } from '../../api/routes/index.js';
import { track } from '../helpers/resources.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { request, startApi, type TestApi } from '../helpers/stack.js';
import { freePort } from '../helpers/ports.js';

/** Sends a body in chunks without Content-Length (Transfer-Encoding: chunked). */
function chunkedPost(
  url: string,
  token: string,
  chunk: Buffer,
  count: number,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${url}/api/v1/keys`,
      {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    // The server may answer and close before the whole body is written; that is its right.
    req.on('error', reject);
    let sent = 0;
    const pump = (): void => {
      while (sent < count) {
        sent++;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      req.end();
    };
    pump();
  });
}

describe('errors', () => {
  let api: TestApi;
  let org: SeededOrg;

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
  });
  after(async () => api.close());

  it('answers 404 not_found for unknown routes, under /api/v1 and elsewhere', async () => {
    for (const path of ['/api/v1/nope', '/api/v1/keys/me/extra', '/nope', '/nope/']) {
      const res = await api.request('GET', path, { token: org.key.token });
      expect(res.status, path).to.equal(404);
      expect(res.json.error.code).to.equal('not_found');
      expect(res.json.error.message).to.be.a('string');
    }
  });

  it('answers 405 method_not_allowed for a known path with another method', async () => {
    const res = await api.request('PUT', '/keys/me', { token: org.key.token, body: {} });
    expect(res.status).to.equal(405);
    expect(res.json.error.code).to.equal('method_not_allowed');
    expect(res.headers.get('allow')).to.contain('GET');
  });

  it('answers OPTIONS with Allow, HEAD like GET without a body, and ignores one trailing slash', async () => {
    const options = await fetch(`${api.url}/api/v1/keys`, { method: 'OPTIONS' });
    expect(options.status).to.equal(200);
    expect(options.headers.get('allow')).to.equal('GET, HEAD, POST, OPTIONS');
    const headers = { authorization: `Bearer ${org.key.token}` };
    const head = await fetch(`${api.url}/api/v1/keys/me`, { method: 'HEAD', headers });
    expect(head.status).to.equal(200);
    expect(head.headers.get('ratelimit-limit')).to.be.a('string');
    expect(await head.text()).to.equal('');
    const slash = await api.request('GET', '/keys/me/', { token: org.key.token });
    expect(slash.status).to.equal(200);
    expect(slash.json.id).to.equal(org.key.id);
  });

  it('decodes percent-encoded path parameters and answers 404 for an unknown id', async () => {
    const res = await api.request('GET', `/keys/${encodeURIComponent(org.key.id)}`, { token: org.key.token });
    expect(res.status).to.equal(200);
    expect(res.json.id).to.equal(org.key.id);
    const odd = await api.request('GET', '/keys/key%20%2F..%2Fnope', { token: org.key.token });
    expect(odd.status).to.equal(404);
    expect(odd.json.error.code).to.equal('not_found');
  });

  it('answers 400 invalid_json for a malformed body', async () => {
    const res = await api.request('POST', '/keys', {
      token: org.key.token,
      raw: '{"name": "x",',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).to.equal(400);
    expect(res.json.error.code).to.equal('invalid_json');
  });

  it('answers 422 validation_error for a body nested deeper than MAX_BODY_DEPTH, with or without Idempotency-Key', async () => {
    const deep = (n: number) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`;
    const cases: [string, string, Record<string, string>][] = [
      ['/emails', `{"to":${'['.repeat(20_000)}${']'.repeat(20_000)}}`, { 'idempotency-key': 'deep-1' }],
      ['/events', '['.repeat(100_000) + ']'.repeat(100_000), { 'idempotency-key': 'deep-2' }],
      ['/events', `{"name":"x","email":"a@example.com","properties":${deep(5_000)}}`, {}],
      ['/events', `{"name":"x","email":"a@example.com","properties":${deep(MAX_BODY_DEPTH)}}`, {}],
    ];
    for (const [path, raw, headers] of cases) {
      const res = await api.request('POST', path, {
        token: org.key.token,
        raw,
        headers: { 'content-type': 'application/json', ...headers },
      });
      expect(res.status, `${path} ${raw.length}`).to.equal(422);
      expect(res.json.error.code).to.equal('validation_error');
      expect(res.json.error.message).to.contain(`deeper than ${MAX_BODY_DEPTH} levels`);
    }
    // Exactly MAX_BODY_DEPTH levels (the body object is the first) is accepted.
    const ok = await api.request('POST', '/events', {
      token: org.key.token,
      raw: `{"name":"x","email":"a@example.com","properties":${deep(MAX_BODY_DEPTH - 1)}}`,
      headers: { 'content-type': 'application/json' },
    });
    expect(ok.status, ok.text).to.equal(202);
  });

  it('answers 422 validation_error naming the field for a lone surrogate in a key or string', async () => {
    const cases: [string, string, string][] = [
      ['/events', '{"name":"x","email":"a@example.com","properties":{"\\ud800":false}}', 'body.properties has a key'],
      [
        '/events',
        '{"name":"x","email":"a@example.com","properties":{"a":["ok","x\\udc00"]}}',
        'body.properties.a.1 must not',
      ],
      ['/contacts', '{"email":"a@example.com","first_name":"\\ude00\\ud83d"}', 'body.first_name must not'],
    ];
    for (const [path, raw, names] of cases) {
      const res = await api.request('POST', path, {
        token: org.key.token,
        raw,
        headers: { 'content-type': 'application/json' },
      });
      expect(res.status, `${path} ${raw}`).to.equal(422);
      expect(res.json.error.code).to.equal('validation_error');
      expect(res.json.error.message).to.contain(names).and.contain('lone surrogate');
    }
    // A pair is one character, stored as sent.
    const ok = await api.request('POST', '/contacts', {
      token: org.key.token,
      raw: '{"email":"b@example.com","first_name":"\\ud83d\\ude00","properties":{"e":"\\ud83d\\ude00"}}',
      headers: { 'content-type': 'application/json' },
    });
    expect(ok.status, ok.text).to.equal(201);
    expect(ok.json.first_name).to.equal('\u{1f600}');
  });

  it('answers 415 unsupported_media_type for a body that is not JSON', async () => {
    const res = await api.request('POST', '/keys', {
      token: org.key.token,
      raw: 'name=x',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(res.status).to.equal(415);
    expect(res.json.error.code).to.equal('unsupported_media_type');
  });

  it('answers 413 payload_too_large for a body over the limit (with Content-Length)', async () => {
    const big = JSON.stringify({ name: 'x'.repeat(api.config.bodyLimitBytes + 10) });
    const res = await api.request('POST', '/keys', {
      token: org.key.token,
      raw: big,
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).to.equal(413);
    expect(res.json.error.code).to.equal('payload_too_large');
  });

  it('answers 413 payload_too_large for a chunked body over the limit (no Content-Length)', async () => {
    const chunk = Buffer.alloc(64 * 1024, 'a');
    const count = Math.ceil(api.config.bodyLimitBytes / chunk.length) + 2;
    const res = await chunkedPost(api.url, org.key.token, chunk, count);
    expect(res.status).to.equal(413);
    expect(JSON.parse(res.body).error.code).to.equal('payload_too_large');
    // The connection pool is still usable afterwards.
    expect((await api.request('GET', '/keys/me', { token: org.key.token })).status).to.equal(200);
  });

  it('answers 500 internal_error without leaking what was thrown', async () => {
    const app = createApp(api.deps, {
      ...allHandlers,
      'GET /keys/me': async () => {
        throw new Error('secret detail');
      },
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', resolve));
    const close = track('throwing app', async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    });
    try {
      const res = await request(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, 'GET', '/keys/me', {
        token: org.key.token,
      });
      expect(res.status).to.equal(500);
      expect(res.json).to.deep.equal({ error: { code: 'internal_error', message: 'Internal server error' } });
      expect(res.text).not.to.contain('secret');
      expect(res.headers.get('x-request-id')).to.match(/^req_/);
    } finally {
      await close();
    }
  });

  it('answers /healthz and /readyz 200 when everything is up', async () => {
    const health = await api.request('GET', '/healthz');
    expect(health.status).to.equal(200);
    const ready = await api.request('GET', '/readyz');
    expect(ready.status).to.equal(200);
    expect(ready.json.checks).to.deep.equal({ postgres: 'ok', redis: 'ok' });
  });

  describe('a backing service down', function () {
    this.timeout(60_000);

    it('answers 503 unavailable at once when Postgres is unreachable', async () => {
      const port = await freePort();
      const down = await startApi({ db: { ...api.db, url: `postgres://postgres@127.0.0.1:${port}/none` } });
      try {
        // A never-seen token cannot be answered from the key cache.
        const res = await down.request('GET', '/keys/me', { token: `tern_live_${'B'.repeat(43)}` });
        expect(res.status).to.equal(503);
        expect(res.json.error.code).to.equal('unavailable');
        expect(res.headers.get('retry-after')).to.equal('1');
        const ready = await down.request('GET', '/readyz');
        expect(ready.status).to.equal(503);
        expect(ready.json.checks).to.deep.equal({ postgres: 'unavailable', redis: 'ok' });
        expect((await down.request('GET', '/healthz')).status).to.equal(200);
      } finally {
        await down.close();
      }
    });

    it('answers 503 unavailable at once when Redis is unreachable', async () => {
      const port = await freePort();
      const down = await startApi({ db: api.db, env: { REDIS_URL: `redis://127.0.0.1:${port}` } });
      try {
        const res = await down.request('GET', '/keys/me', { token: org.key.token });
        expect(res.status).to.equal(503);
        expect(res.json.error.code).to.equal('unavailable');
        const ready = await down.request('GET', '/readyz');
        expect(ready.status).to.equal(503);
        expect(ready.json.checks).to.deep.equal({ postgres: 'ok', redis: 'unavailable' });
      } finally {
        await down.close();
      }
    });
  });
});
