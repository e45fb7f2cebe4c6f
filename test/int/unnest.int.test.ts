// shared/db/unnest.ts writes each column as one array literal: every value a column can hold
// reaches Postgres unchanged, hostile text included, and the first statement of a new pool works
// (no dependence on the array types postgres.js fetches when a connection opens).
import { expect } from 'chai';
import { createPool, type Sql } from '../../shared/db/pool.js';
import { unnestRows, type ColumnSpec } from '../../shared/db/unnest.js';
import { startApi, type TestApi } from '../helpers/stack.js';

interface Row {
  t: string | null;
  i: number | null;
  b: boolean | null;
  ts: Date | null;
  by: Buffer | null;
  j: unknown;
  ta: string[] | null;
}

const SPEC: ColumnSpec<Row> = {
  t: 'text',
  i: 'integer',
  b: 'boolean',
  ts: 'timestamptz',
  by: 'bytea',
  j: 'jsonb',
  ta: 'text[]',
};

const HOSTILE = ['NULL', '', ' ', '"', '\\', '\\"', '{}', '{a,b}', 'a,b', "it's", 'é ü 🚀', '\t\n\r', 'x\\x00y'];

describe('unnest rows: one array literal per column', function () {
  this.timeout(60_000);
  let api: TestApi;
  let fresh: Sql;

  before(async () => {
    api = await startApi();
    fresh = createPool(api.deps.config.databaseUrl, { max: 1 });
  });
  after(async () => {
    await fresh.end({ timeout: 5 });
    await api.close();
  });

  async function roundTrip(db: Sql, rows: Row[]): Promise<Row[]> {
    return await db.begin(async (tx) => {
      await tx`create temporary table u_rows (n serial, t text, i integer, b boolean, ts timestamptz, by bytea, j jsonb, ta text[]) on commit drop`;
      const u = unnestRows(tx, rows, SPEC);
      await tx`insert into u_rows (${u.columns}) ${u.select}`;
      return await tx<Row[]>`select t, i, b, ts, by, j, ta from u_rows order by n`;
    });
  }

  it('the first statement of a new pool, with integer, boolean, bytea and timestamp columns', async () => {
    const rows: Row[] = [
      {
        t: 'a',
        i: 1,
        b: true,
        ts: new Date('2026-01-02T03:04:05.678Z'),
        by: Buffer.from([0, 1, 255]),
        j: { a: 1 },
        ta: ['x'],
      },
      { t: null, i: null, b: null, ts: null, by: null, j: null, ta: null },
    ];
    expect(await roundTrip(fresh, rows)).to.deep.equal(rows);
  });

  it('keeps hostile text, JSON and text arrays exactly', async () => {
    const rows: Row[] = HOSTILE.map((s, n) => ({
      t: s,
      i: n * 7 - 30,
      b: n % 2 === 0,
      ts: new Date(Date.UTC(2026, 0, 1, 0, 0, n)),
      by: Buffer.from(s, 'utf8'),
      j: { s, list: [s, null, n], nested: { [s]: s } },
      ta: [s, `${s}${s}`, 'NULL', ''],
    }));
    expect(await roundTrip(api.deps.sql, rows)).to.deep.equal(rows);
  });

  it('carries a large binary value (2 MB of every byte value)', async () => {
    const by = Buffer.alloc(2 * 1024 * 1024);
    for (let k = 0; k < by.length; k++) by[k] = k % 256;
    const [row] = await roundTrip(api.deps.sql, [{ t: 'big', i: 0, b: false, ts: null, by, j: [], ta: [] }]);
    expect(Buffer.compare(row!.by!, by)).to.equal(0);
  });
});
