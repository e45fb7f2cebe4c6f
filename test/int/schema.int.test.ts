// test/schema.sql is what the migrations build: a migration that changes the schema changes this
// file in the same commit, so the schema change is reviewed as a diff.
import { readFile } from 'node:fs/promises';
import { expect } from 'chai';
import { currentSchema, normalizeDump, SCHEMA_FILE } from '../helpers/schema.js';

/** The first lines where two texts part, with a little context, for the failure message. */
function firstDifference(want: string, got: string): string {
  const a = want.split('\n');
  const b = got.split('\n');
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  const from = Math.max(0, i - 3);
  const show = (lines: string[]) => lines.slice(from, i + 5).join('\n');
  return `line ${i + 1}\n--- test/schema.sql\n${show(a)}\n--- the migrations\n${show(b)}`;
}

describe('test/schema.sql', () => {
  it('is what the migrations in sql/ build (npm run schema:dump rewrites it)', async function () {
    this.timeout(60_000);
    const [want, got] = await Promise.all([readFile(SCHEMA_FILE, 'utf8'), currentSchema()]);
    if (want !== got) {
      expect.fail(
        `test/schema.sql is not the schema the migrations build. Run \`npm run schema:dump\` and commit ` +
          `test/schema.sql with the migration. First difference at ${firstDifference(want, got)}`,
      );
    }
  });

  it('keeps only the schema: no version comments, SET lines or \\restrict keys', () => {
    const dump = [
      '--',
      '-- PostgreSQL database dump',
      '--',
      '\\restrict k3yk3yk3y',
      '-- Dumped from database version 15.20',
      'SET statement_timeout = 0;',
      "SELECT pg_catalog.set_config('search_path', '', false);",
      '',
      '',
      '',
      'CREATE TABLE public.t (',
      '    id text NOT NULL',
      ');',
      '',
      '\\unrestrict k3yk3yk3y',
      '',
    ].join('\n');
    expect(normalizeDump(dump)).to.equal('CREATE TABLE public.t (\n    id text NOT NULL\n);\n');
  });
});
