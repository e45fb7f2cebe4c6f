import { expect } from 'chai';
import { mailboxHashOf, matchRoute, normaliseRoutes, type InboundRoute } from '../../shared/domains/inbound-routes.js';
import { stripReply } from '../../shared/mail/reply-text.js';
import { parseSrsAddress, srsAddress, SRS_MAX_AGE_DAYS } from '../../shared/mail/srs.js';

const SECRET = 'unit-test-secret-0123456789abcdefghij';
const DAY = 86_400_000;

describe('stripped_text: the reply without quoted history and signature', () => {
  const cases: [string, string, string][] = [
    [
      'Gmail "On … wrote:"',
      'Sounds good, see you then.\n\nOn Mon, 3 Mar 2025 at 10:00, Acme <hello@acme.test> wrote:\n> Shall we meet?\n> Acme',
      'Sounds good, see you then.',
    ],
    [
      'Gmail attribution wrapped on two lines',
      'Yes please.\n\nOn Mon, 3 Mar 2025 at 10:00, Acme Support Team With A Long Name <support@acme.test>\nwrote:\n\n> Do you want the upgrade?',
      'Yes please.',
    ],
    [
      'Outlook "From: … Sent: …" block',
      'Approved.\r\n\r\nFrom: Acme Billing <billing@acme.test>\r\nSent: Monday, March 3, 2025 10:00 AM\r\nTo: Pat <pat@example.net>\r\nSubject: Invoice 42\r\n\r\nPlease approve invoice 42.',
      'Approved.',
    ],
    [
      'Outlook bold header and underscore separator',
      'Thanks!\n\n________________________________\n*From:* Acme <hello@acme.test>\n*Sent:* Monday\n*To:* Pat\n\nOld text',
      'Thanks!',
    ],
    ['-----Original Message-----', 'Done.\n-----Original Message-----\nFrom: x\nold', 'Done.'],
    ['a trailing block of > quotes', 'I agree.\n\n> You wrote this\n> and this\n', 'I agree.'],
    [
      'inline answers between quotes keep the answers',
      '> Question one?\nAnswer one.\n> Question two?\nAnswer two.',
      'Answer one.\nAnswer two.',
    ],
    ['the "-- " signature', 'See attached.\n\n-- \nPat Example\nCEO, Example Inc.', 'See attached.'],
    ['a device footer', 'On my way.\n\nSent from my iPhone', 'On my way.'],
    [
      'a French attribution',
      'Merci !\n\nLe lun. 3 mars 2025 à 10:00, Acme <a@acme.test> a écrit :\n> Bonjour',
      'Merci !',
    ],
    [
      'a German attribution',
      'Danke!\n\nAm Mo., 3. März 2025 um 10:00 Uhr schrieb Acme <a@acme.test>:\n> Hallo',
      'Danke!',
    ],
    ['plain text without history stays whole', 'Line one\nLine two\n\nLine four', 'Line one\nLine two\n\nLine four'],
    ['nothing but a quote is empty', '> only a quote', ''],
  ];
  for (const [name, text, want] of cases) {
    it(name, () => expect(stripReply(text)).to.equal(want));
  }

  it('keeps "On" sentences that are not attributions', () => {
    expect(stripReply('On Monday we ship.\nThanks')).to.equal('On Monday we ship.\nThanks');
  });
});

describe('inbound routes: matching and validation', () => {
  const routes: InboundRoute[] = [
    { match: '*', action: 'reject' },
    { match: '*@acme.test', action: 'webhook' },
    { match: 'billing@acme.test', action: 'forward', forward_to: 'accounts@example.net' },
    { match: 'billing+urgent@acme.test', action: 'webhook' },
    { match: 'spam@acme.test', action: 'reject' },
  ];
  const settings = { enabled: true, routes };
  const action = (a: string) => matchRoute(settings, a)?.action ?? null;

  it('takes the most specific route whatever the order: address, local+tag, *@domain, catch-all', () => {
    expect(action('billing+urgent@acme.test')).to.equal('webhook');
    expect(matchRoute(settings, 'billing+urgent@acme.test')?.match).to.equal('billing+urgent@acme.test');
    expect(action('billing+other@acme.test')).to.equal('forward');
    expect(action('BILLING@ACME.TEST')).to.equal('forward');
    expect(action('spam@acme.test')).to.equal('reject');
    expect(action('anyone@acme.test')).to.equal('webhook');
    expect(matchRoute({ enabled: true, routes: [routes[0]!] }, 'x@acme.test')?.action).to.equal('reject');
    expect(matchRoute({ enabled: true, routes: [] }, 'x@acme.test')).to.equal(null);
  });

  it('reads the mailbox hash after the first +', () => {
    expect(mailboxHashOf('support+ticket-42@acme.test')).to.equal('ticket-42');
    expect(mailboxHashOf('support+a+b@acme.test')).to.equal('a+b');
    expect(mailboxHashOf('support@acme.test')).to.equal(null);
    expect(mailboxHashOf('support+@acme.test')).to.equal(null);
  });

  it('normalises routes and refuses matches of another domain, a bad local part, or a bad forward', () => {
    const ok = normaliseRoutes('acme.test', [
      { match: ' Support@ACME.test ', action: 'forward', forward_to: 'Team@Example.NET' },
    ]);
    expect(ok).to.deep.equal([{ match: 'support@acme.test', action: 'forward', forward_to: 'team@example.net' }]);
    const refusals: [InboundRoute, RegExp][] = [
      [{ match: 'x@other.test', action: 'webhook' }, /routes\[0\]\.match must be/],
      [{ match: '*@other.test', action: 'webhook' }, /routes\[0\]\.match must be/],
      [{ match: 'a b@acme.test', action: 'webhook' }, /not a valid local part/],
      [{ match: '*', action: 'forward' }, /forward_to is required/],
      [{ match: '*', action: 'webhook', forward_to: 'a@b.test' }, /only for action "forward"/],
      [{ match: '*', action: 'forward', forward_to: 'not an address' }, /routes\[0\]\.forward_to/],
    ];
    for (const [route, reason] of refusals) {
      expect(normaliseRoutes('acme.test', [route])).to.match(reason);
    }
  });
});

describe('SRS addresses of forwarded mail', () => {
  const now = Date.UTC(2025, 2, 3);

  it('round-trips the original sender, case-insensitively', () => {
    const a = srsAddress('Pat.Example@Example.NET', 'bounces.acme.test', SECRET, now);
    expect(a).to.match(/^SRS0=[a-z2-7]{4}=[a-z2-7]{2}=example\.net=Pat\.Example@bounces\.acme\.test$/);
    expect(parseSrsAddress(a, SECRET, now)).to.equal('Pat.Example@example.net');
    expect(parseSrsAddress(a.toLowerCase(), SECRET, now + DAY)).to.equal('pat.example@example.net');
  });

  it('refuses another secret, a changed address, and an address older than the limit', () => {
    const a = srsAddress('pat@example.net', 'bounces.acme.test', SECRET, now);
    expect(parseSrsAddress(a, `${SECRET}x`, now)).to.equal(null);
    expect(parseSrsAddress(a.replace('=pat@', '=eve@'), SECRET, now)).to.equal(null);
    expect(parseSrsAddress(a, SECRET, now + SRS_MAX_AGE_DAYS * DAY)).to.not.equal(null);
    expect(parseSrsAddress(a, SECRET, now + (SRS_MAX_AGE_DAYS + 1) * DAY)).to.equal(null);
    expect(parseSrsAddress('SRS0=zzzz=aa@bounces.acme.test', SECRET, now)).to.equal(null);
  });
});
