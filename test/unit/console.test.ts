// The console's pure parts: wait reasons in plain words, the Emails filters, the id bound of a
// date range, escaping, the audit line of an action.
import { expect } from 'chai';
import { audit } from '../../api/console/audit.js';
import { parseFilters, subjectWords } from '../../api/console/email-filters.js';
import { html, when } from '../../api/console/html.js';
import { dataTable, stateBadge } from '../../api/console/ui.js';
import { explainWait, type WaitFacts } from '../../api/console/waits.js';
import type { ApiContext } from '../../api/types.js';
import type { SessionRow } from '../../shared/db/users.js';
import { emailIdAt } from '../../shared/db/email-search.js';
import { newId } from '../../shared/ids.js';

const org = { paused: false, reason: null };
const facts = (f: Partial<WaitFacts>): WaitFacts => ({
  status: 'queued',
  wait_reason: null,
  next_attempt_at: null,
  attempt_started_at: null,
  attempts: 0,
  ...f,
});
const text = (s: { value: string } | null) => s?.value.replace(/\s+/g, ' ').replace(/<[^>]+>/g, '') ?? null;

describe('console', () => {
  describe('explainWait', () => {
    it('says when a retry comes and after which reply', () => {
      const s = explainWait(
        facts({
          status: 'delivery_delayed',
          wait_reason: 'retry at 2030-01-01T14:05:00.000Z after: 451 4.7.1 greylisted',
        }),
        org,
      );
      expect(text(s)).to.equal('Retry at 2030-01-01 14:05 UTC after 451 4.7.1 greylisted');
      expect(s!.value).to.contain('<time datetime="2030-01-01T14:05:00.000Z"');
    });

    it("tells Tern's own pacing from a receiver's refusal", () => {
      const s = explainWait(
        facts({
          status: 'delivery_delayed',
          wait_reason:
            'retry at 2030-01-01T14:05:00.000Z after: provider gmail throttled: waiting for its rate to recover',
        }),
        org,
      );
      expect(text(s)).to.match(/^Retry at 2030-01-01 14:05 UTC: Tern is pacing gmail/);
    });

    it('names the pause reason while paused, and says it resumes otherwise', () => {
      const held = facts({ wait_reason: 'sending paused' });
      expect(text(explainWait(held, { paused: true, reason: 'complaint rate 0.4 % > 0.3 %' }))).to.equal(
        'Held: organization paused: complaint rate 0.4 % &#62; 0.3 %. It goes out once sending resumes.',
      );
      expect(text(explainWait(held, org))).to.match(/^Held while sending was paused; sending has resumed/);
    });

    it("explains the daily cap as tomorrow's cap, and scheduled messages", () => {
      expect(text(explainWait(facts({ wait_reason: 'over daily cap until 2030-01-02T00:00:00.000Z' }), org))).to.match(
        /^Waiting for tomorrow's cap: .* after 2030-01-02 00:00 UTC\.$/,
      );
      expect(
        text(explainWait(facts({ status: 'scheduled', wait_reason: 'scheduled for 2030-01-02T08:00:00.000Z' }), org)),
      ).to.equal('Scheduled for 2030-01-02 08:00 UTC.');
    });

    it('says nothing once a recipient ended, and shows an unknown reason as given (escaped)', () => {
      expect(explainWait(facts({ status: 'delivered' }), org)).to.equal(null);
      expect(explainWait(facts({ status: 'bounced', wait_reason: 'x' }), org)).to.equal(null);
      expect(explainWait(facts({ wait_reason: '<b>odd</b>' }), org)!.value).to.equal('&#60;b&#62;odd&#60;/b&#62;');
    });
  });

  describe('Emails filters', () => {
    it('reads recipient prefixes, sender addresses, subject words, tags and an inclusive date range', () => {
      const f = parseFilters({
        to: 'Bob@Example.com*',
        from: 'Acme <Hello@Acme.test>',
        subject: 'Order #1234, shipped!',
        tag: 'order = 1234',
        since: '2030-01-01',
        until: '2030-01-31',
        mode: 'test',
      });
      expect(f.problems).to.deep.equal([]);
      expect(f.search).to.deep.include({
        mode: 'test',
        recipient: { value: 'bob@example.com', prefix: true },
        from: 'hello@acme.test',
        subjectWords: ['order', '1234', 'shipped'],
        tag: { name: 'order', value: '1234' },
      });
      expect(f.search.since!.toISOString()).to.equal('2030-01-01T00:00:00.000Z');
      expect(f.search.until!.toISOString()).to.equal('2030-02-01T00:00:00.000Z');
      expect(f.filtered).to.equal(true);
      expect(parseFilters({ mode: 'test' }).filtered).to.equal(false);
    });

    it('keeps subject words to letters and digits (they become a text query)', () => {
      expect(subjectWords(`a:* & !b | 'c' <->`)).to.deep.equal(['a', 'b', 'c']);
      expect(subjectWords('Größe Über')).to.deep.equal(['größe', 'über']);
    });

    it('reports values it cannot use', () => {
      const f = parseFilters({ state: 'gone', key: 'nope', template: 'tpl_x', domain: 'x' });
      expect(f.problems).to.have.length(4);
      expect(f.search).to.deep.equal({ mode: 'live' });
    });
  });

  it('bounds ids by time: an id made at t sorts between the bounds of t and t + 1 ms', () => {
    const before = Date.now();
    const id = newId('em');
    expect(emailIdAt(before) <= id).to.equal(true);
    expect(id < emailIdAt(Date.now() + 1)).to.equal(true);
    expect(emailIdAt(0)).to.equal('em_00000000000000000000000000');
  });

  it('escapes every interpolated value, and a badge shows its state as words', () => {
    expect(html`<p title="${'"x"'}">${'<script>'}</p>`.value).to.equal('<p title="&#34;x&#34;">&#60;script&#62;</p>');
    expect(stateBadge('delivery_delayed').value).to.equal(
      '<span class="badge warn" data-state="delivery_delayed">delayed</span>',
    );
    expect(when(null).value).to.contain('never');
  });

  it('audits an action as one CONSOLE_ACTION line with actor, action, target and IP, and one audit row', async () => {
    const lines: [Record<string, unknown>, string][] = [];
    const inserts: unknown[][] = [];
    const sql = Object.assign(
      (_strings: TemplateStringsArray, ...values: unknown[]) => {
        inserts.push(values);
        return Promise.resolve([{}]);
      },
      { json: (v: unknown) => v },
    );
    const ctx = {
      ip: '203.0.113.9',
      deps: { sql },
      state: { log: { info: (o: Record<string, unknown>, m: string) => lines.push([o, m]) } },
    } as unknown as ApiContext;
    const session = { user_id: 'usr_1', email: 'a@example.test', org_id: 'org_1' } as SessionRow;
    await audit(ctx, session, 'email.canceled', { type: 'email', id: 'em_1' });
    expect(inserts).to.have.length(1);
    expect(inserts[0]!.slice(1, 8)).to.deep.equal([
      'org_1',
      'user',
      'usr_1',
      'email.canceled',
      'email',
      'em_1',
      '203.0.113.9',
    ]);
    expect(lines).to.deep.equal([
      [
        {
          event: 'CONSOLE_ACTION',
          actor: { type: 'user', id: 'usr_1', email: 'a@example.test' },
          orgId: 'org_1',
          action: 'email.canceled',
          target: { type: 'email', id: 'em_1' },
          ip: '203.0.113.9',
        },
        'console action email.canceled',
      ],
    ]);
  });
});

describe('console list tables on phones', () => {
  it('labels each cell after its column (row headers and cells with a label of their own keep theirs)', () => {
    const rows = [
      html`<tr>
        <th scope="row">delivery</th>
        <td class="num">3</td>
        <td data-label="Own">x</td>
        <td><button>Remove</button></td>
      </tr>`,
    ];
    const out = dataTable(
      ['Queue', { label: 'Waiting', num: true }, 'Mine', { label: 'Actions', hidden: true }],
      rows,
    ).toString();
    expect(out).to.contain('<table class="cards-sm"');
    expect(out).to.contain('<th scope="row">delivery</th>');
    expect(out).to.contain('<td data-label="Waiting" class="num">3</td>');
    expect(out).to.contain('<td data-label="Own">x</td>');
    expect(out).to.contain('<td data-label=""><button>Remove</button></td>');
    // A table with a phone layout of its own, or one kept as a table, is left as it is.
    const one = (opts: { cls?: string; scroll?: boolean }) =>
      dataTable(
        ['A'],
        [
          html`<tr>
            <td>1</td>
          </tr>`,
        ],
        opts,
      ).toString();
    expect(one({ cls: 'stack-sm' })).not.to.contain('data-label');
    expect(one({ scroll: true })).not.to.contain('cards-sm');
  });
});
