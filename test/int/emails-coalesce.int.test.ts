// Group commit of small sends (api/mail/emails-coalesce.ts): concurrent requests share one
// INSERT, and sharing changes no request's answer: a statement Postgres refuses fails only the
// request at fault, and each request's rows are stored exactly once.
import { expect } from 'chai';
import { InsertCoalescer, type InsertRows } from '../../api/mail/emails-coalesce.js';
import { createPool, type Sql } from '../../shared/db/pool.js';
import { newId } from '../../shared/ids.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { unthrottle } from '../helpers/unthrottle.js';

describe('group commit of small sends', function () {
  this.timeout(60_000);
  let api: TestApi;
  let org: SeededOrg;
  let token: string;
  let sql: Sql;
  let inserts = 0;

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    await unthrottle(api, org.organization.id);
    token = (await org.mint({ permission: 'SEND' })).token;
    sql = createPool(api.deps.config.databaseUrl, {
      max: 4,
      onQuery: (statement) => {
        if (/^\s*(with m as \()?\s*insert into emails/i.test(statement)) inserts++;
      },
    });
  });
  after(async () => {
    await sql.end({ timeout: 5 });
    await api.close();
  });

  function rows(domainId = org.domains['acme.test']!.id): InsertRows {
    const id = newId('em');
    return {
      emails: [
        {
          id,
          org_id: org.organization.id,
          key_id: null,
          domain_id: domainId,
          mode: 'live',
          from_address: 'a@acme.test',
          from_email: 'a@acme.test',
          to_addresses: ['b@example.com'],
          cc_addresses: [],
          bcc_addresses: [],
          reply_to: [],
          subject: 'group commit',
          html: null,
          text: 'hi',
          headers: {},
          tags: [],
          kind: null,
          topic_id: null,
          template_id: null,
          template_slug: null,
          template_version: null,
          message_id: `${id}@acme.test`,
          status: 'queued',
          scheduled_at: null,
        },
      ],
      recipients: [
        {
          id: newId('rcp'),
          email_id: id,
          org_id: org.organization.id,
          field: 'to',
          address: 'b@example.com',
          email: 'b@example.com',
          domain: 'example.com',
          status: 'queued',
          wait_reason: null,
        },
      ],
      attachments: [],
    };
  }

  const stored = async (ids: string[]) =>
    (await api.deps.sql<{ id: string }[]>`select id from emails where id = any(${ids}) order by id`).map((r) => r.id);

  it('stores 60 concurrent messages in fewer statements than messages, each once', async () => {
    const c = new InsertCoalescer(sql, 2, 5000);
    const all = Array.from({ length: 60 }, () => rows());
    inserts = 0;
    await Promise.all(all.map((r) => c.insert(r, () => {})));
    const ids = all.map((r) => r.emails[0]!.id).sort();
    expect(await stored(ids)).to.deep.equal(ids);
    expect(inserts).to.be.at.least(1).and.at.most(30);
    const [recipients] = await api.deps.sql<{ n: number }[]>`
      select count(*)::int as n from email_recipients where email_id = any(${ids})`;
    expect(recipients!.n).to.equal(60);
  });

  it('a message Postgres refuses fails alone; the others of its shared insert are stored', async () => {
    const c = new InsertCoalescer(sql, 1, 5000);
    // A domain id that does not exist: the foreign key refuses that row, and so the shared statement.
    const bad = rows(newId('dom'));
    const good = Array.from({ length: 9 }, () => rows());
    inserts = 0;
    const outcomes = await Promise.allSettled(
      [...good.slice(0, 4), bad, ...good.slice(4)].map((r) => c.insert(r, () => {})),
    );
    const refused = outcomes.filter((o) => o.status === 'rejected');
    expect(refused).to.have.length(1);
    expect(String((refused[0] as PromiseRejectedResult).reason)).to.match(/foreign key/);
    expect(outcomes[4]!.status).to.equal('rejected');
    const ids = good.map((r) => r.emails[0]!.id).sort();
    expect(await stored(ids)).to.deep.equal(ids);
    expect(await stored([bad.emails[0]!.id])).to.deep.equal([]);
    // The shared insert was tried, then each message alone.
    expect(inserts).to.be.at.least(11);
  });

  it('through the API: 80 concurrent POST /emails are all answered 200 and stored once', async () => {
    const answers = await Promise.all(
      Array.from({ length: 80 }, (_, i) =>
        api.request('POST', '/emails', {
          token,
          body: { from: 'a@acme.test', to: `r${i}@example.com`, subject: `concurrent ${i}`, text: 'hi' },
        }),
      ),
    );
    expect(answers.map((a) => a.status)).to.deep.equal(answers.map(() => 200));
    const ids = answers.map((a) => a.json.id as string).sort();
    expect(new Set(ids).size).to.equal(80);
    expect(await stored(ids)).to.deep.equal(ids);
  });
});
