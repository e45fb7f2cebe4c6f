// Starts Tern's HTTP API for a test: its own database (from the template), its own Redis
// prefix, an ephemeral port. A second instance can share the first one's database and prefix
// (two web processes of one install).
import { expect } from 'chai';
import type { AddressInfo } from 'node:net';
import { createApp } from '../../api/app.js';
import { createDeps, type OwnedDeps } from '../../api/deps.js';
import { createWebServer } from '../../api/server.js';
import { loadConfig, type Config } from '../../shared/config.js';
import { createLogger } from '../../shared/logger.js';
import { closeTestDb, createTestDb, type TestDb } from './db.js';
import { clearPrefix, TEST_REDIS_URL, testPrefix } from './redis-prefix.js';
import { track } from './resources.js';

export interface TestApi {
  url: string;
  config: Config;
  deps: OwnedDeps;
  db: TestDb;
  request(method: string, path: string, opts?: RequestOptions): Promise<TestResponse>;
  close(): Promise<void>;
}

export interface RequestOptions {
  token?: string;
  body?: unknown;
  /** Raw body bytes/string sent as is (for malformed-input tests). */
  raw?: string | Buffer;
  headers?: Record<string, string>;
}

export interface TestResponse {
  status: number;
  headers: Headers;
  text: string;
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

export interface StartOptions {
  /** Share another instance's database (and, with `prefix`, its Redis namespace). */
  db?: TestDb;
  prefix?: string;
  env?: Record<string, string>;
}

/**
 * The install secret of every test process (web, workers, children), passed explicitly: Tern's
 * processes refuse to start without one.
 */
export const TEST_SECRET_KEY = 'tern-test-secret-0123456789abcdefghijklmnop';

export async function startApi(opts: StartOptions = {}): Promise<TestApi> {
  const ownDb = !opts.db;
  const ownPrefix = !opts.prefix;
  const prefix = opts.prefix ?? testPrefix();
  const db = opts.db ?? (await createTestDb());
  const config = loadConfig({
    DATABASE_URL: db.url,
    REDIS_URL: TEST_REDIS_URL,
    REDIS_PREFIX: prefix,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    PORT: '0',
    WEBHOOK_ALLOW_PRIVATE: 'true',
    SECRET_KEY: TEST_SECRET_KEY,
    ...opts.env,
  });
  const deps = await createDeps(config, createLogger(config.logLevel, 'web-test'));
  const app = createApp(deps);
  const server = createWebServer(app).listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;
  const close = track(`api ${url}`, async () => {
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
    await deps.close();
    if (ownDb) await closeTestDb(db);
    if (ownPrefix) await clearPrefix(prefix);
  });
  return {
    url,
    config: { ...config, port, baseUrl: url },
    deps,
    db,
    close,
    request: (method, path, ro = {}) => request(url, method, path, ro),
  };
}

export async function request(
  base: string,
  method: string,
  path: string,
  opts: RequestOptions = {},
): Promise<TestResponse> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  let body: string | Buffer | undefined;
  if (opts.raw !== undefined) body = opts.raw;
  else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(
    `${base}${path.startsWith('/api/') || path.startsWith('/t/') || path.startsWith('/healthz') || path.startsWith('/readyz') ? '' : '/api/v1'}${path}`,
    {
      method,
      headers,
      body,
    },
  );
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

/**
 * Asserts an API error answer: its status and its `{"error":{"code","message"}}` body with `code`
 * and a message. `context` is shown when the status differs (the request body, say).
 */
export function expectError(res: TestResponse, status: number, code: string, context?: string): void {
  expect(res.status, context ?? res.text).to.equal(status);
  expect(res.json?.error?.code, res.text).to.equal(code);
  expect(res.json.error.message).to.be.a('string').and.not.equal('');
}
