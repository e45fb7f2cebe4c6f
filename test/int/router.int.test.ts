// The web process's one router (api/router.ts) across its areas: the API, tracking links, the
// console and the root's health checks all answer HEAD like GET, 405 with Allow for a known path
// under another method, OPTIONS with Allow, and ignore one trailing slash; a miss is rendered by
// its area (a page under /console, the API's JSON elsewhere).
import { expect } from 'chai';
import { createRouter } from '../../api/router.js';
import { startApi, type TestApi } from '../helpers/stack.js';

describe('one router', () => {
  let api: TestApi;

  before(async () => {
    api = await startApi();
  });
  after(async () => api.close());

  const call = (method: string, path: string) => fetch(`${api.url}${path}`, { method, redirect: 'manual' });

  it('answers HEAD wherever GET works, without a body', async () => {
    for (const path of ['/healthz', '/console/login', '/console/assets/console.css', '/favicon.ico']) {
      const get = await call('GET', path);
      const head = await call('HEAD', path);
      expect(head.status, path).to.equal(get.status);
      expect(head.status, path).to.equal(200);
      expect(head.headers.get('content-type'), path).to.equal(get.headers.get('content-type'));
      expect(await head.text(), path).to.equal('');
    }
    expect((await call('GET', '/favicon.ico')).headers.get('content-type')).to.equal('image/svg+xml');
  });

  it('answers 405 with Allow in the area shape, and OPTIONS with Allow, in every area', async () => {
    const health = await call('PUT', '/healthz');
    expect(health.status).to.equal(405);
    expect(health.headers.get('allow')).to.equal('GET, HEAD, OPTIONS');
    expect(((await health.json()) as { error: { code: string } }).error.code).to.equal('method_not_allowed');

    const tracking = await call('DELETE', '/t/u/some-token');
    expect(tracking.status).to.equal(405);
    expect(tracking.headers.get('allow')).to.equal('GET, HEAD, POST, OPTIONS');
    expect(((await tracking.json()) as { error: { code: string } }).error.code).to.equal('method_not_allowed');

    // The console renders it as a page with its security headers, never as JSON.
    const page = await call('PUT', '/console/keys');
    expect(page.status).to.equal(405);
    expect(page.headers.get('allow')).to.equal('GET, HEAD, POST, OPTIONS');
    expect(page.headers.get('content-type')).to.match(/^text\/html/);
    expect(page.headers.get('x-frame-options')).to.equal('DENY');
    expect(await page.text()).to.contain('data-error="method_not_allowed"');

    const options = await call('OPTIONS', '/t/o/some-token');
    expect(options.status).to.equal(200);
    expect(options.headers.get('allow')).to.equal('GET, HEAD, OPTIONS');
  });

  it('renders a miss by its area: a console page under /console, the API error elsewhere', async () => {
    const page = await call('GET', '/console/nope');
    expect(page.status).to.equal(404);
    expect(page.headers.get('content-type')).to.match(/^text\/html/);
    expect(page.headers.get('content-security-policy')).to.contain("default-src 'none'");
    expect(await page.text()).to.contain('data-error="not_found"');
    for (const path of ['/t/nope', '/t', '/metricz', '/api/v1/nope']) {
      const res = await call('GET', path);
      expect(res.status, path).to.equal(404);
      expect(((await res.json()) as { error: { code: string } }).error.code, path).to.equal('not_found');
    }
  });

  it('ignores one trailing slash in every area', async () => {
    expect((await call('GET', '/healthz/')).status).to.equal(200);
    expect((await call('GET', '/console/login/')).status).to.equal(200);
    // The console's home is /console and /console/ alike (both send a visitor to sign in).
    for (const path of ['/console', '/console/']) {
      const res = await call('GET', path);
      expect(res.status, path).to.equal(303);
      expect(res.headers.get('location'), path).to.equal('/console/login');
    }
  });

  it('refuses at start-up a route outside its area', () => {
    const run = () => undefined;
    expect(() => createRouter([{ prefix: '/t', routes: [{ method: 'GET', path: '/x', run }] }])).to.throw(
      /outside its area/,
    );
    expect(() => createRouter([{ prefix: '/t', routes: [{ method: 'GET', path: '/tx', run }] }])).to.throw(
      /outside its area/,
    );
  });
});
