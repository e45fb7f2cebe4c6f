// The OpenAPI document (GET /api/v1/openapi.json): valid OpenAPI 3.1 (swagger-parser), every
// route of the dispatcher in it and every operation in it routed (a request without a key reaches
// the route's authorization), the permission table's rules on each operation, examples that pass
// the very validators the routes use, and the /docs/api page with its assets and CSP.
import SwaggerParser from '@apidevtools/swagger-parser';
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { ERROR_STATUS } from '../../shared/errors.js';
import { ROUTES, routeId } from '../../shared/permissions.js';
import { apiArea, API_PREFIX } from '../../api/dispatch.js';
import { OPERATIONS } from '../../api/openapi/build.js';
import { allHandlers } from '../../api/routes/index.js';
import { DOCS_CSP } from '../../api/openapi/serve.js';
import { BODY_ITEM_SCHEMAS, BODY_SCHEMAS } from '../../api/schemas/registry.js';
import { bodyValidator } from '../../api/validate.js';
import { startApi, type TestApi } from '../helpers/stack.js';

type Doc = {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown>; responses: Record<string, Response> };
};
type Operation = {
  summary: string;
  description?: string;
  security?: unknown[];
  requestBody?: { content: Record<string, { example?: unknown }> };
  responses: Record<string, Response | { $ref: string }>;
  [ext: `x-tern-${string}`]: unknown;
};
type Response = { content?: Record<string, { examples?: Record<string, { value: { error: { code: string } } }> }> };

const openApiPath = (koaPath: string) => koaPath.replace(/:(\w+)/g, '{$1}') || '/';
const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

describe('OpenAPI document', () => {
  let api: TestApi;
  let doc: Doc;

  before(async () => {
    api = await startApi();
    const res = await api.request('GET', '/openapi.json');
    expect(res.status, res.text).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^application\/json/);
    doc = res.json as Doc;
  });
  after(async () => await api.close());

  it('is served without a key and is a valid OpenAPI 3.1 document', async () => {
    expect(doc.openapi).to.equal('3.1.0');
    // validate() dereferences in place: give it a copy.
    await SwaggerParser.validate(structuredClone(doc) as never);
  });

  it('holds every route of the permission table, with its rules', () => {
    const missing: string[] = [];
    for (const rule of ROUTES) {
      const op = doc.paths[openApiPath(rule.path)]?.[rule.method.toLowerCase()];
      if (!op) {
        missing.push(routeId(rule));
        continue;
      }
      expect(op.summary, routeId(rule)).to.equal(OPERATIONS[rule.aliasOf ?? routeId(rule)]!.summary);
      expect(op['x-tern-permission'], routeId(rule)).to.equal(rule.tier);
      expect(op['x-tern-live-only'], routeId(rule)).to.equal(rule.liveOnly);
      expect(op['x-tern-restricted'], routeId(rule)).to.equal(rule.restricted);
      expect(op['x-tern-sending'], routeId(rule)).to.equal(rule.sending);
      expect(op.description, routeId(rule)).to.include('**Permission**');
      if (rule.liveOnly) expect(op.description, routeId(rule)).to.include('live keys only');
      // An upload's body is its CSV (text/csv or a multipart form), not a JSON schema.
      expect(Boolean(op.requestBody), `${routeId(rule)} request body`).to.equal(Boolean(rule.body || rule.upload));
      if (rule.upload) {
        expect(Object.keys(op.requestBody!.content), routeId(rule)).to.deep.equal(['text/csv', 'multipart/form-data']);
      }
    }
    expect(missing).to.deep.equal([]);
  });

  it('holds every route of the dispatcher (the API area of the router), and only those', () => {
    const routed = apiArea(allHandlers, 1024).routes.map(
      (r) => `${r.method.toLowerCase()} ${openApiPath(r.path.slice(API_PREFIX.length))}`,
    );
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops)
        .filter((m) => METHODS.includes(m))
        .map((m) => `${m} ${path}`),
    );
    expect(documented.sort()).to.deep.equal(routed.sort());
  });

  it('answers the base URL without a key: where the document and the reference page are', async () => {
    for (const path of ['/api/v1', '/api/v1/']) {
      const res = await fetch(`${api.url}${path}`);
      expect(res.status, path).to.equal(200);
      const body = (await res.json()) as { openapi: string; reference: string };
      expect(body).to.include({
        object: 'api',
        version: 'v1',
        openapi: '/api/v1/openapi.json',
        reference: '/docs/api',
      });
      expect((await fetch(`${api.url}${body.openapi}`)).status).to.equal(200);
      expect((await fetch(`${api.url}${body.reference}`)).status).to.equal(200);
    }
  });

  it('routes every operation it lists: a request without a key gets the route’s own 401', async () => {
    const unrouted: string[] = [];
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const method of Object.keys(ops).filter((m) => METHODS.includes(m))) {
        const concrete = path.replace(/\{(\w+)\}/g, 'x1');
        const res = await api.request(method.toUpperCase(), `/api/v1${concrete}`);
        const publicDoc = path === '/openapi.json' || path === '/';
        const ok = publicDoc ? res.status === 200 : res.status === 401 && res.json?.error?.code === 'unauthorized';
        if (!ok) unrouted.push(`${method.toUpperCase()} ${path} → ${res.status} ${res.text.slice(0, 80)}`);
      }
    }
    expect(unrouted).to.deep.equal([]);
  });

  it('lists for each operation the error codes it can answer, under their statuses', () => {
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        for (const [status, entry] of Object.entries(op.responses)) {
          if (Number(status) < 400) continue;
          const ref = (entry as { $ref?: string }).$ref;
          const response = ref ? doc.components.responses[ref.split('/').pop()!] : (entry as Response);
          expect(response, `${method} ${path} ${status}`).to.not.equal(undefined);
          const examples = Object.values(response!.content!['application/json']!.examples!);
          expect(examples.length).to.be.greaterThan(0);
          for (const ex of examples) {
            expect(ERROR_STATUS[ex.value.error.code as keyof typeof ERROR_STATUS], `${method} ${path}`).to.equal(
              Number(status),
            );
          }
        }
        if (op.security?.length === 0) continue; // this document: no key, no failure but a fault
        // Every API key route is rate-limited; the intake (its own secret) is not.
        const expected = op.security ? ['401', '500', '503'] : ['401', '429', '500', '503'];
        expect(Object.keys(op.responses), `${method} ${path}`).to.include.members(expected);
      }
    }
    // What the rules imply: a live-only ADMIN route refuses with 403; a sending route names the pause.
    const send = doc.paths['/emails']!.post!;
    const codes403 = (send.responses['403'] as { $ref: string }).$ref;
    expect(codes403).to.include('sending_paused');
    expect(doc.paths['/emails/{id}']!.get!.responses).to.have.property('404');
    expect(doc.paths['/emails']!.post!.responses).to.have.property('409'); // Idempotency-Key
  });

  it('leaves the routes no other way to validate than the schemas the document shows', () => {
    // A handler validates with routeBody/routeQuery (api/route-schemas.ts), i.e. with the schema
    // its permission-table row names; compiling a schema of its own would bypass the document.
    const dir = new URL('../../api/routes/', import.meta.url);
    const own = readdirSync(dir)
      .filter((f) => f.endsWith('.ts'))
      .filter((f) => /\b(bodyValidator|queryValidator)\(/.test(readFileSync(new URL(f, dir), 'utf8')));
    expect(own).to.deep.equal([]);
  });

  it('gives request examples that the routes’ own validators accept', () => {
    let checked = 0;
    for (const rule of ROUTES.filter((r) => r.body)) {
      const op = doc.paths[openApiPath(rule.path)]![rule.method.toLowerCase()]!;
      const example = op.requestBody!.content['application/json']!.example;
      if (example === undefined) continue;
      bodyValidator(BODY_SCHEMAS[rule.body!]!)(structuredClone(example));
      const item = BODY_ITEM_SCHEMAS[rule.body!];
      if (item) for (const x of example as unknown[]) bodyValidator(BODY_SCHEMAS[item]!)(structuredClone(x));
      checked += 1;
    }
    expect(checked).to.be.greaterThan(30);
  });

  it('serves the reference page and its assets from this process, under a CSP of its own origin only', async () => {
    const page = await fetch(`${api.url}/docs/api`);
    expect(page.status).to.equal(200);
    expect(page.headers.get('content-security-policy')).to.equal(DOCS_CSP);
    expect(DOCS_CSP).to.not.match(/unsafe|https?:|\*/);
    const html = await page.text();
    const srcs = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(srcs.filter((s) => !s.startsWith('/'))).to.deep.equal([]);
    expect(html).to.not.match(/<script>|<style>|style="/);
    for (const src of srcs.filter((s) => s.startsWith('/docs/'))) {
      const res = await fetch(`${api.url}${src}`);
      expect(res.status, src).to.equal(200);
      expect((await res.arrayBuffer()).byteLength, src).to.be.greaterThan(10);
    }
    const unlisted = await fetch(`${api.url}/docs/api/assets/package.json`);
    expect(unlisted.status).to.equal(404);
    expect(((await unlisted.json()) as { error: { code: string } }).error.code).to.equal('not_found');
  });
});
