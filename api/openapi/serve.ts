// GET /api/v1/openapi.json (no key) and the reference page /docs/api, which renders it with
// Swagger UI served by this process from node_modules (no CDN). The page's CSP allows only this
// install: its script and stylesheet are files, the start-up call a file of ours, no inline code.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Area, Route } from '../router.js';
import type { ApiContext } from '../types.js';
import { buildOpenApi } from './build.js';
import { apiIndex, OPENAPI_PATH } from './extra.js';

export const DOCS_PATH = '/docs/api';
const ASSETS = `${DOCS_PATH}/assets/`;

export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** The version in the package.json of this checkout (the first one found above this file). */
function packageVersion(): string {
  for (let dir = import.meta.dirname; ; dir = path.dirname(dir)) {
    const file = path.join(dir, 'package.json');
    if (existsSync(file)) return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
    if (path.dirname(dir) === dir) return '0.0.0';
  }
}

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Tern API reference</title>
<link rel="stylesheet" href="${ASSETS}swagger-ui.css">
</head>
<body>
<noscript><p>This page renders <a href="/api/v1/openapi.json">the OpenAPI document</a> with JavaScript.</p></noscript>
<div id="swagger-ui"></div>
<script src="${ASSETS}swagger-ui-bundle.js"></script>
<script src="${ASSETS}init.js"></script>
</body>
</html>
`;

// No validator badge (it would call a remote service), the document from this install.
const INIT = `window.ui = SwaggerUIBundle({
  url: '/api/v1/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  validatorUrl: null,
  docExpansion: 'list',
  defaultModelsExpandDepth: 0,
  showExtensions: true,
  tryItOutEnabled: false
});
`;

interface Asset {
  type: string;
  body: Buffer | string;
}

/** The files the page loads, read once on first use. */
function assets(): Map<string, Asset> {
  const dist = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  const file = (name: string, type: string): [string, Asset] => [
    name,
    { type, body: readFileSync(path.join(dist, name)) },
  ];
  return new Map([
    file('swagger-ui.css', 'text/css; charset=utf-8'),
    file('swagger-ui-bundle.js', 'text/javascript; charset=utf-8'),
    ['init.js', { type: 'text/javascript; charset=utf-8', body: INIT }],
  ]);
}

let built: string | undefined;

/** The document as served: built once per process (it depends on the code, not on the config). */
export function openApiJson(): string {
  return (built ??= JSON.stringify(buildOpenApi({ version: packageVersion() })));
}

/** GET /api/v1, the API's index, a route of the API's area (api/dispatch.ts), without a key. */
export function apiIndexRoute(prefix: string): Route {
  const body = apiIndex(prefix);
  return {
    method: 'GET',
    path: prefix,
    run: (ctx) => {
      ctx.body = body;
    },
  };
}

/** GET /api/v1/openapi.json, a route of the API's area (api/dispatch.ts), without a key. */
export function openApiRoute(prefix: string): Route {
  const json = openApiJson();
  return {
    method: 'GET',
    path: prefix + OPENAPI_PATH,
    run: (ctx) => {
      ctx.set('Cache-Control', 'no-cache');
      ctx.set('Access-Control-Allow-Origin', '*');
      ctx.type = 'application/json; charset=utf-8';
      ctx.body = json;
    },
  };
}

/** `/docs/api` and its assets, for the one router (api/router.ts). */
export function docsArea(): Area {
  let files: Map<string, Asset> | undefined;
  const headers = (ctx: ApiContext, cache: string) => {
    ctx.set('Content-Security-Policy', DOCS_CSP);
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.set('Cache-Control', cache);
  };
  return {
    prefix: '/docs',
    routes: [
      {
        method: 'GET',
        path: DOCS_PATH,
        run: (ctx) => {
          headers(ctx, 'no-cache');
          ctx.type = 'text/html; charset=utf-8';
          ctx.body = PAGE;
        },
      },
      {
        method: 'GET',
        path: `${ASSETS}:file`,
        run: (ctx, next) => {
          const asset = (files ??= assets()).get(ctx.params.file ?? '');
          if (!asset) return next();
          headers(ctx, 'public, max-age=3600');
          ctx.type = asset.type;
          ctx.body = asset.body;
        },
      },
    ],
  };
}
