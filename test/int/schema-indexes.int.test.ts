// Every foreign key that a row deletion follows has an index on its column: without one, each
// parent row deleted makes Postgres scan the whole child table (a domain's delete cascades through
// its messages, see sql/000240_cascade_indexes.sql). The keys left without one are listed here,
// each with the reason.
import { expect } from 'chai';
import { closeTestDb, createTestDb, type TestDb } from '../helpers/db.js';

/** References to rows that are never deleted one by one, where an index would only slow inserts. */
const UNINDEXED: Record<string, string> = {
  'emails.key_id': 'api_keys are revoked, not deleted',
  'broadcasts.key_id': 'api_keys are revoked, not deleted',
  'emails.template_id': 'templates are soft-deleted',
  'broadcasts.template_id': 'templates are soft-deleted',
  'automation_runs.org_id': 'organizations are only removed whole',
  'dmarc_reports.org_id': 'organizations are only removed whole',
  'dmarc_reports.inbound_id': 'inbound messages are blanked by retention, never deleted one by one',
};

describe('foreign key indexes', () => {
  let db: TestDb;
  before(async () => {
    db = await createTestDb();
  });
  after(async () => closeTestDb(db));

  it('index the column of every foreign key, but for the listed exceptions', async () => {
    const rows = await db.sql<{ key: string }[]>`
      select c.conrelid::regclass::text || '.' || a.attname as key
      from pg_constraint c
      join pg_attribute a on a.attrelid = c.conrelid and a.attnum = c.conkey[1]
      where c.contype = 'f' and cardinality(c.conkey) = 1
        and not exists (select 1 from pg_index i where i.indrelid = c.conrelid and i.indkey[0] = c.conkey[1])
      order by 1`;
    expect(rows.map((r) => r.key)).to.have.members(Object.keys(UNINDEXED));
  });

  it("serves a message's delete with the index on inbound_messages.forward_email_id", async () => {
    // What the foreign key's trigger runs for each message deleted (on delete set null).
    await db.sql.begin(async (tx) => {
      await tx`set local enable_seqscan = off`;
      const plan = await tx.unsafe(
        `explain update only inbound_messages set forward_email_id = null where forward_email_id = 'em_x'`,
      );
      expect(plan.map((r) => String(r['QUERY PLAN'])).join('\n')).to.contain('inbound_messages_forward_email_idx');
    });
  });
});
