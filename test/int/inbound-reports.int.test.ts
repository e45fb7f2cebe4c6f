import { expect } from 'chai';
import { pino } from 'pino';
import { verpToken } from '../../shared/mail/verp.js';
import { fixture, REPORT_FIXTURES } from '../helpers/inbound-fixtures.js';
import { insertEmailRows } from '../helpers/mail-rows.js';
import { queuedId, smtpSession, startMxWithWorker } from '../helpers/mx.js';
import { seedOrg, type SeededOrg } from '../helpers/seed.js';
import { startApi, type TestApi } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';

describe('DSN and ARF reports by mail', () => {
  let api: TestApi;
  let org: SeededOrg;
  let other: SeededOrg;
  let port: number;
  let logLines: Record<string, unknown>[];
  let closeAll: () => Promise<void>;

  before(async () => {
    api = await startApi();
    org = await seedOrg(api.deps.sql, { domains: [{ name: 'acme.test' }] });
    other = await seedOrg(api.deps.sql, { domains: [{ name: 'beta.test' }] });
    logLines = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void logLines.push(JSON.parse(line)) });
    const mx = await startMxWithWorker(api, { logger });
    port = mx.port;
    closeAll = mx.close;
  });
  after(async () => {
    await closeAll();
    await api.close();
  });

  let n = 0;
  async function sentEmail(to = `pat.${++n}@example.net`) {
    const d = org.domains['acme.test']!;
    const e = await insertEmailRows(api.deps.sql, {
      orgId: org.organization.id,
      domainId: d.id,
      domainName: d.name,
      to: [to],
    });
    const rcpt = e.recipients[0]!;
    const token = verpToken(rcpt.id, api.config.secretKey);
    return { ...e, rcpt, token, messageId: `${e.emailId}@acme.test`, verp: `b+${token}@bounces.acme.test` };
  }

  async function processed(id: string) {
    return await waitFor('the report to be processed', async () => {
      const [row] = await api.deps.sql`select * from inbound_messages where id = ${id} and status <> 'stored'`;
      return row;
    });
  }

  async function eventsOf(recipientId: string) {
    return await api.deps.sql`
      select type, bounce_type, detail, email_id from events
      where recipient_id = ${recipientId} and type in ('email.bounced', 'email.complained')`;
  }

  for (const f of REPORT_FIXTURES) {
    const what = f.expected ? `${f.expected.type} ${JSON.stringify(f.expected)}` : 'no event';
    it(`${f.file} to the ${f.to === 'verp' ? 'VERP address' : 'fixed address'} → ${what}`, async () => {
      const sent = await sentEmail();
      const fixed = 'fbl@reply.acme.test';
      const msg = fixture(f.file, {
        VERP: sent.verp,
        RCPT: sent.rcpt.email,
        OTHER: 'someone.else@example.net',
        FIXED: fixed,
        MESSAGE_ID: sent.messageId,
      });
      const { rcptReplies, data } = await smtpSession(port, [f.to === 'verp' ? sent.verp : fixed], msg, '');
      expect(rcptReplies[0]!.code).to.equal(250);
      const row = await processed(queuedId(data));
      expect(row.status).to.equal('processed');
      const events = await eventsOf(sent.rcpt.id);
      if (!f.expected) {
        expect(events).to.have.length(0);
      } else {
        expect(events).to.have.length(1);
        expect(events[0]).to.deep.equal({
          type: f.expected.type,
          bounce_type: f.expected.type === 'email.bounced' ? f.expected.bounceType : null,
          detail: f.expected.detail,
          email_id: sent.emailId,
        });
      }
      const sups = await api.deps.sql`
        select reason from suppressions where org_id = ${org.organization.id} and email = ${sent.rcpt.email}`;
      expect(sups.map((s) => s.reason)).to.deep.equal(f.suppression ? [f.suppression] : []);
      // Nothing is ever suppressed for the recipient a report names but that is not ours.
      const others = await api.deps.sql`select 1 from suppressions where email = 'someone.else@example.net'`;
      expect(others).to.have.length(0);
    });
  }

  it('refuses a VERP address whose HMAC does not verify with 550 5.1.1, and logs INBOUND_BAD_VERP', async () => {
    const sent = await sentEmail();
    const forged = sent.verp.replace(/\.([a-z2-7])([a-z2-7]{12})@/, (_, c: string, rest: string) => {
      return `.${c === 'a' ? 'b' : 'a'}${rest}@`;
    });
    expect(forged).to.not.equal(sent.verp);
    logLines.length = 0;
    const msg = fixture('postfix-dsn-user-unknown.eml', {
      VERP: forged,
      RCPT: sent.rcpt.email,
      MESSAGE_ID: sent.messageId,
    });
    const { rcptReplies, data } = await smtpSession(port, [forged], msg, '');
    expect(rcptReplies[0]!.code).to.equal(550);
    expect(rcptReplies[0]!.text).to.match(/^5\.1\.1 /);
    expect(data).to.equal(null);
    expect(logLines.filter((l) => l.event === 'INBOUND_BAD_VERP' && l.rcpt === forged)).to.have.length(1);
    expect(await eventsOf(sent.rcpt.id)).to.have.length(0);
  });

  it("never touches a recipient of another organization named by a genuine token on this org's domain", async () => {
    const sent = await sentEmail();
    // The token is valid (same install secret), but the bounce domain is the other org's.
    const crossVerp = `b+${sent.token}@bounces.beta.test`;
    for (const file of ['postfix-dsn-user-unknown.eml', 'yahoo-arf-abuse.eml']) {
      const msg = fixture(file, { VERP: crossVerp, RCPT: sent.rcpt.email, MESSAGE_ID: sent.messageId });
      const { rcptReplies, data } = await smtpSession(port, [crossVerp], msg, '');
      expect(rcptReplies[0]!.code).to.equal(250);
      const row = await processed(queuedId(data));
      expect(row.org_id).to.equal(other.organization.id);
    }
    expect(await eventsOf(sent.rcpt.id)).to.have.length(0);
    const [rcpt] = await api.deps.sql`select status, complained_at from email_recipients where id = ${sent.rcpt.id}`;
    expect(rcpt).to.deep.equal({ status: 'sent', complained_at: null });
    const sups = await api.deps.sql`select 1 from suppressions where email = ${sent.rcpt.email}`;
    expect(sups).to.have.length(0);
  });
});
