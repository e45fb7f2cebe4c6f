// Test databases: the migrations are applied once to a template database named after a hash of
// sql/'s contents (kept and reused by later runs and other checkouts), then every test file gets
// its own copy (CREATE DATABASE … TEMPLATE), dropped when the file ends.
import { createHash, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import postgres from 'postgres';
import { listMigrations, migrate } from '../../shared/db/migrate.js';
import { createPool, type Sql } from '../../shared/db/pool.js';
import { track } from './resources.js';
import { sleep } from './wait.js';

export const ADMIN_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export function dbUrl(name: string): string {
  const u = new URL(ADMIN_URL);
  u.pathname = `/${name}`;
  return u.toString();
}

const created = new Set<string>();
let template: Promise<string> | null = null;

/**
 * The template's name comes from what sql/ holds (each migration's file name and text), not from
 * where the checkout is: every run and every checkout with the same migrations shares one template.
 */
export async function templateName(dir?: string): Promise<string> {
  const h = createHash('sha256');
  for (const m of await listMigrations(dir))
    h.update(basename(m.file))
      .update('\0')
      .update(await readFile(m.file));
  return `tern_tpl_${h.digest('hex').slice(0, 16)}`;
}

async function ensureTemplate(): Promise<string> {
  const name = await templateName();
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
        await sleep(100 + attempt * 50);
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

/**
 * Closes the file's pool and drops its database at once; one that cannot be dropped now is
 * dropped by the root hook, which fails the file if it still cannot.
 */
export async function closeTestDb(db: TestDb): Promise<void> {
  await (db.sql as Sql & { closeTracked: () => Promise<void> }).closeTracked();
  await dropDatabases([db.name]);
}

/** Drops the databases; returns "name: reason" for each that could not be dropped (kept for a retry). */
async function dropDatabases(names: string[]): Promise<string[]> {
  if (names.length === 0) return [];
  const failed: string[] = [];
  const admin = postgres(ADMIN_URL, { max: 4, onnotice: () => {} });
  try {
    // A few at a time: each DROP DATABASE waits for a checkpoint-like flush of its files.
    for (let i = 0; i < names.length; i += 4) {
      await Promise.all(
        names.slice(i, i + 4).map(async (name) => {
          try {
            await admin.unsafe(`drop database if exists "${name}" with (force)`);
            created.delete(name);
          } catch (err) {
            failed.push(`${name}: ${err instanceof Error ? err.message : String(err)}`);
          }
        }),
      );
    }
  } finally {
    await admin.end();
  }
  return failed;
}

/** Drops what the file created and has not dropped; returns those that could not be dropped. */
export async function dropCreatedDatabases(): Promise<string[]> {
  return await dropDatabases([...created]);
}

/** The database `tern`, migrated, on a private Postgres cluster (bench/lib/private-services.ts). */
export async function privateDatabase(pg: { url: string; urlFor(db: string): string }): Promise<Sql> {
  const admin = createPool(pg.url, { max: 1 });
  await admin.unsafe('create database tern');
  await admin.end();
  const sql = createPool(pg.urlFor('tern'), { max: 4 });
  await migrate(sql);
  return sql;
}
