// Applies sql/NNNNNN_<slug>.sql in order, each in its own transaction that also records it in
// tern_migrations. A transaction-scoped advisory lock makes concurrent runners (two `release`
// processes, parallel test files) wait for each other instead of applying a file twice.
import { readdir, readFile } from 'node:fs/promises';
import { fromRoot } from '../paths.js';
import type { Db, Sql } from './pool.js';

const LOCK_ID = 7_240_301; // arbitrary, constant: "tern migrations"

export interface Migration {
  id: number;
  name: string;
  file: string;
}

export async function listMigrations(dir = fromRoot('sql')): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => /^\d{6}_[a-z0-9_]+\.sql$/.test(f)).sort();
  return files.map((file) => ({ id: Number(file.slice(0, 6)), name: file.slice(7, -4), file: `${dir}/${file}` }));
}

/** The migrations recorded as applied (none when the table does not exist yet). */
export async function appliedMigrations(db: Db): Promise<{ id: number; name: string }[]> {
  const [exists] = await db<{ t: string | null }[]>`select to_regclass('tern_migrations')::text as t`;
  if (!exists?.t) return [];
  return await db<{ id: number; name: string }[]>`select id, name from tern_migrations order by id`;
}

/** Applies pending migrations; returns the names of those this call applied. */
export async function migrate(sql: Sql, dir?: string): Promise<string[]> {
  const migrations = await listMigrations(dir);
  await sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${LOCK_ID})`;
    await tx`create table if not exists tern_migrations (
      id integer primary key,
      name text not null,
      applied_at timestamptz not null default now()
    )`;
  });
  const applied: string[] = [];
  for (const m of migrations) {
    const text = await readFile(m.file, 'utf8');
    const done = await sql.begin(async (tx) => {
      await tx`select pg_advisory_xact_lock(${LOCK_ID})`;
      const [row] = await tx`select 1 from tern_migrations where id = ${m.id}`;
      if (row) return false;
      await tx.unsafe(text);
      await tx`insert into tern_migrations (id, name) values (${m.id}, ${m.name})`;
      return true;
    });
    if (done) applied.push(`${String(m.id).padStart(6, '0')}_${m.name}`);
  }
  return applied;
}
