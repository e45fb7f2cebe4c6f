// DELETE /domains/{id} on a domain with a real history (issue 11 item 5): 20,000 messages with
// 100,000 events, suppressions, a broadcast and inbound replies, seeded with set-based SQL. The
// cascade follows indexed foreign keys (sql/000240_cascade_indexes.sql), so the delete ends
// within the pool's statement timeout; without them each recipient scanned `events` once. The
// test asserts what was deleted and what was kept, not how long it took.
import { expect } from 'chai';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi } from '../helpers/stack.js';

const EMAILS = 20_000;
const EVENTS_PER_RECIPIENT = 5;

describe('DELETE /domains/{id} with 100,000 events', function () {
  this.timeout(180_000);
  let api: TestApi;
  let org: SeededOrg;

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }, { name: 'kept.test' }] });
  });
  after(async () => api.close());

  /** `n` sent messages of one recipient each, with EVENTS_PER_RECIPIENT events per recipient. */
  async function history(domain: string, tag: string, n: number): Promise<void> {
    const sql = api.deps.sql;
    const orgId = org.organization.id;
    const domainId = org.domains[domain]!.id;
    await sql`
      insert into emails (id, org_id, domain_id, mode, from_address, from_email, to_addresses, subject, text,
                          message_id, status)
      select 'em_' || ${tag} || lpad(i::text, 6, '0'), ${orgId}, ${domainId}, 'live', 'a@' || ${domain},
             'a@' || ${domain}, array['r' || i || '@example.com'], 's', 't',
             'em_' || ${tag} || i || '@' || ${domain}, 'sent'
      from generate_series(1, ${n}) i`;
    await sql`
      insert into email_recipients (id, email_id, org_id, field, address, email, domain, status)
      select 'rcp_' || ${tag} || lpad(i::text, 6, '0'), 'em_' || ${tag} || lpad(i::text, 6, '0'), ${orgId}, 'to',
             'r' || i || '@example.com', 'r' || i || '@example.com', 'example.com', 'delivered'
      from generate_series(1, ${n}) i`;
    await sql`
      insert into events (id, org_id, mode, type, email_id, recipient_id, recipient, domain_id, dedupe_key)
      select 'evt_' || ${tag} || lpad(i::text, 6, '0') || '_' || k, ${orgId}, 'live',
             (array['email.sent', 'email.delivered', 'email.opened', 'email.clicked', 'email.clicked'])[k],
             'em_' || ${tag} || lpad(i::text, 6, '0'), 'rcp_' || ${tag} || lpad(i::text, 6, '0'),
             'r' || i || '@example.com', ${domainId}, ${tag} || i || ':' || k
      from generate_series(1, ${n}) i, generate_series(1, ${EVENTS_PER_RECIPIENT}) k`;
    await sql`
      insert into suppressions (id, org_id, email, domain_id, reason)
      select 'sup_' || ${tag} || i, ${orgId}, 'r' || i || '@example.com', ${domainId}, 'hard_bounce'
      from generate_series(1, 100) i`;
    await sql`
      insert into inbound_messages (id, org_id, domain_id, source, raw, size, email_id)
      select 'inb_' || ${tag} || i, ${orgId}, ${domainId}, 'mx', '\\x00', 1, 'em_' || ${tag} || lpad(i::text, 6, '0')
      from generate_series(1, 100) i`;
    await sql`
      insert into broadcasts (id, org_id, mode, domain_id, from_address, status)
      values (${`bc_${tag}`}, ${orgId}, 'live', ${domainId}, ${`a@${domain}`}, 'sent')`;
  }

  const count = async (table: string, where: string, value: string) =>
    (await api.deps.sql.unsafe(`select count(*)::int as n from ${table} where ${where}`, [value]))[0]!.n as number;

  it('deletes the domain and everything that cascades from it, and keeps the rest', async () => {
    await history('acme.test', 'a', EMAILS);
    await history('kept.test', 'k', 100);
    expect(await count('events', 'email_id like $1', 'em_a%')).to.equal(EMAILS * EVENTS_PER_RECIPIENT);
    await api.deps.sql`analyze`;

    const admin = await org.mint({ permission: 'ADMIN' });
    const gone = org.domains['acme.test']!;
    const res = await api.request('DELETE', `/domains/${gone.id}`, { token: admin.token });
    expect(res.status, res.text).to.equal(200);
    expect(res.json).to.deep.equal({ object: 'domain', id: gone.id, name: 'acme.test', deleted: true });

    expect(await count('domains', 'id = $1', gone.id)).to.equal(0);
    expect(await count('emails', 'id like $1', 'em_a%')).to.equal(0);
    expect(await count('email_recipients', 'id like $1', 'rcp_a%')).to.equal(0);
    expect(await count('events', 'id like $1', 'evt_a%')).to.equal(0);
    expect(await count('suppressions', 'domain_id = $1', gone.id)).to.equal(0);
    expect(await count('broadcasts', 'id = $1', 'bc_a')).to.equal(0);
    // Inbound replies stay, no longer tied to the domain or its messages.
    expect(await count('inbound_messages', 'id like $1 and domain_id is null and email_id is null', 'inb_a%')).to.equal(
      100,
    );

    // The other domain's history is untouched.
    expect(await count('emails', 'id like $1', 'em_k%')).to.equal(100);
    expect(await count('events', 'id like $1', 'evt_k%')).to.equal(100 * EVENTS_PER_RECIPIENT);
    expect(await count('suppressions', 'domain_id = $1', org.domains['kept.test']!.id)).to.equal(100);
    expect(await count('inbound_messages', 'id like $1 and email_id is not null', 'inb_k%')).to.equal(100);
  });
});
