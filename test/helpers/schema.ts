// test/schema.sql: `pg_dump --schema-only` of a database the migrations just built, with what
// varies between machines and runs taken out (version comments, SET lines, pg_dump's \restrict
// guard and its random key), so that a schema change shows as a diff in review.
// `npm run schema:dump` (test/helpers/schema-dump.ts) rewrites it; test/int/schema.int.test.ts
// fails when it is out of date.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fromRoot } from '../../shared/paths.js';
import { closeTestDb, createTestDb } from './db.js';

export const SCHEMA_FILE = fromRoot('test', 'schema.sql');

/** The normalized schema-only dump of the database at `url`. */
export async function dumpSchema(url: string): Promise<string> {
  const { stdout } = await promisify(execFile)(
    process.env.PG_DUMP ?? 'pg_dump',
    ['--schema-only', '--no-owner', '--no-privileges', '--no-tablespaces', url],
    { maxBuffer: 64 * 1024 * 1024 },
  );
  return normalizeDump(stdout);
}

/** Drops comments, session settings and blank-line runs: what is left is the schema itself. */
export function normalizeDump(dump: string): string {
  const kept = dump
    .split('\n')
    .filter((line) => !/^(--|SET |SELECT pg_catalog\.set_config\(|\\(un)?restrict )/.test(line));
  return `${kept
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim()}\n`;
}

/** The schema of a fresh copy of the template database the migrations built. */
export async function currentSchema(): Promise<string> {
  const db = await createTestDb();
  try {
    return await dumpSchema(db.url);
  } finally {
    await closeTestDb(db);
  }
}
