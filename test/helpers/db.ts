// Test databases: the migrations are applied once to a template database named after a hash of
// sql/, then every test file gets its own copy (CREATE DATABASE … TEMPLATE), dropped at the end.
import { createHash, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import postgres from 'postgres';
import { listMigrations, migrate } from '../../shared/db/migrate.js';
import { createPool, type Sql } from '../../shared/db/pool.js';
import { track } from './resources.js';

export const ADMIN_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export function dbUrl(name: string): string {
  const u = new URL(ADMIN_URL);
  u.pathname = `/${name}`;
  return u.toString();
}

const created = new Set<string>();
let template: Promise<string> | null = null;

async function schemaHash(): Promise<string> {
  const h = createHash('sha256');
  for (const m of await listMigrations()) h.update(m.file).update(await readFile(m.file));
  return h.digest('hex').slice(0, 16);
}

async function ensureTemplate(): Promise<string> {
  const name = `tern_tpl_${await schemaHash()}`;
  const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} });
  try {
    await admin`select pg_advisory_lock(hashtext(${name}))`;
    const [exists] = await admin`select 1 from pg_database where datname = ${name}`;
    if (!exists) {
      await admin.unsafe(`create database "${name}_tmp"`).catch(async () => {
        await admin.unsafe(`drop database if exists "${name}_tmp" with (force)`);
        await admin.unsafe(`create database "${name}_tmp"`);
      });
      const sql = createPool(dbUrl(`${name}_tmp`), { max: 1 });
      try {
        await migrate(sql);
      } finally {
        await sql.end();
      }
      // Renamed only when complete, so a half-migrated template is never cloned.
      await admin.unsafe(`alter database "${name}_tmp" rename to "${name}"`);
    }
    await admin`select pg_advisory_unlock(hashtext(${name}))`;
  } finally {
    await admin.end();
  }
  return name;
}

export interface TestDb {
  name: string;
  url: string;
  sql: Sql;
}

/** A fresh, migrated database of this test file's own. */
export async function createTestDb(): Promise<TestDb> {
  template ??= ensureTemplate();
  const tpl = await template;
  const name = `tern_t_${randomBytes(6).toString('hex')}`;
  const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} });
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        await admin.unsafe(`create database "${name}" template "${tpl}"`);
        break;
      } catch (err) {
        // Another runner may be copying the same template at this instant.
        if (attempt >= 20 || !/being accessed by other users/.test(String(err))) throw err;
        await new Promise((r) => setTimeout(r, 100 + attempt * 50));
      }
    }
  } finally {
    await admin.end();
  }
  created.add(name);
  const sql = createPool(dbUrl(name), { max: 10, application: 'tern-test' });
  const closeSql = track(`pool ${name}`, () => sql.end({ timeout: 5 }));
  return { name, url: dbUrl(name), sql: Object.assign(sql, { closeTracked: closeSql }) };
}

/** Closes the file's pool and drops its database at once (the root hook drops any left over). */
export async function closeTestDb(db: TestDb): Promise<void> {
  await (db.sql as Sql & { closeTracked: () => Promise<void> }).closeTracked();
  await dropDatabases([db.name]);
}

async function dropDatabases(names: string[]): Promise<void> {
  if (names.length === 0) return;
  const admin = postgres(ADMIN_URL, { max: 4, onnotice: () => {} });
  try {
    // A few at a time: each DROP DATABASE waits for a checkpoint-like flush of its files.
    for (let i = 0; i < names.length; i += 4) {
      await Promise.all(
        names.slice(i, i + 4).map(async (name) => {
          await admin.unsafe(`drop database if exists "${name}" with (force)`).catch(() => {});
          created.delete(name);
        }),
      );
    }
  } finally {
    await admin.end();
  }
}

export async function dropCreatedDatabases(): Promise<void> {
  await dropDatabases([...created]);
}
