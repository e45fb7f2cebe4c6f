import { expect } from 'chai';
import {
  instrumentHtml,
  listUnsubscribeHeaders,
  trackingEnabled,
  unsubscribeUrl,
  verifyTrackingToken,
  type InstrumentOptions,
} from '../../shared/tracking.js';

const SECRET = 'unit-test-secret-0123456789abcdefghijkl';
const BASE = 'https://t.acme.test';
const opts = (o: Partial<InstrumentOptions> = {}): InstrumentOptions => ({
  baseUrl: BASE,
  secret: SECRET,
  emailId: 'em_1',
  recipientId: 'rcp_1',
  opens: true,
  clicks: true,
  ...o,
});

/** The destinations of every click link in `html`, decoded from their tokens. */
function clickTargets(html: string): string[] {
  const out: string[] = [];
  for (const m of html.matchAll(/https:\/\/t\.acme\.test\/t\/c\/([A-Za-z0-9_.-]+)/g)) {
    const p = verifyTrackingToken(SECRET, m[1]!, 'c');
    expect(p, m[1]).not.to.equal(null);
    out.push(p!.url!);
  }
  return out;
}

describe('instrumentHtml', () => {
  it('rewrites http and https links, decoding entities in the destination', () => {
    const html = '<p><a href="https://a.example/x?y=1&amp;z=2">A</a> <A class=b HREF=http://b.example/>B</A></p>';
    const out = instrumentHtml(html, opts({ opens: false }));
    expect(clickTargets(out)).to.deep.equal(['https://a.example/x?y=1&z=2', 'http://b.example/']);
    expect(out).to.contain('>A</a>');
    expect(out).to.contain('<A class=b href="https://t.acme.test/t/c/');
  });

  it('leaves mailto:, tel:, anchors, relative links, our own links and opted-out links alone', () => {
    const unsub = unsubscribeUrl({ baseUrl: BASE, secret: SECRET, emailId: 'em_1', recipientId: 'rcp_1' });
    const html =
      `<a href="mailto:x@y.example">m</a><a href="tel:+123">t</a><a href="#top">a</a><a href="/rel">r</a>` +
      `<a href="${unsub}">unsubscribe</a><a data-tern-notrack href="https://keep.example/">k</a>` +
      `<a href="javascript:alert(1)">j</a><a name="x">n</a>`;
    expect(instrumentHtml(html, opts({ opens: false }))).to.equal(html);
  });

  it('ignores links inside comments, scripts and attribute values, and keeps every other byte', () => {
    const html =
      '<!doctype html><html><head><style>a[href="https://s.example"]{}</style></head><body>' +
      '<!-- <a href="https://c.example">c</a> --><script>var s = \'<a href="https://j.example">\';</script>' +
      '<img alt=\'<a href="https://i.example">\' src="https://img.example/x.png">' +
      '<a title="see href=https://t.example" href="https://real.example/">go</a></body></html>';
    const out = instrumentHtml(html, opts({ opens: false }));
    expect(clickTargets(out)).to.deep.equal(['https://real.example/']);
    const restored = out.replace(/href="https:\/\/t\.acme\.test\/t\/c\/[^"]+"/, 'href="https://real.example/"');
    expect(restored).to.equal(html);
  });

  it('adds the open pixel before </body>, or at the end when there is none', () => {
    const withBody = instrumentHtml('<html><body><p>x</p></BODY></html>', opts({ clicks: false }));
    expect(withBody).to.match(
      /<p>x<\/p><img src="https:\/\/t\.acme\.test\/t\/o\/[^"]+" width="1" height="1"[^>]*\/><\/BODY><\/html>$/,
    );
    const token = /\/t\/o\/([^"]+)"/.exec(withBody)![1]!;
    expect(verifyTrackingToken(SECRET, token, 'o')).to.deep.equal({ kind: 'o', emailId: 'em_1', recipientId: 'rcp_1' });
    const fragment = instrumentHtml('<p>hello</p>', opts({ clicks: false }));
    expect(fragment).to.match(/^<p>hello<\/p><img src="https:\/\/t\.acme\.test\/t\/o\//);
  });

  it('does both at once and nothing when both are off', () => {
    const html = '<body><a href="https://a.example/">a</a></body>';
    const out = instrumentHtml(html, opts());
    expect(clickTargets(out)).to.deep.equal(['https://a.example/']);
    expect(out).to.contain('/t/o/');
    expect(instrumentHtml(html, opts({ opens: false, clicks: false }))).to.equal(html);
  });
});

describe('trackingEnabled', () => {
  it('uses the domain flag when set and the organization default otherwise', () => {
    const org = { track_opens: true, track_clicks: false };
    expect(trackingEnabled(org, { track_opens: null, track_clicks: null })).to.deep.equal({
      opens: true,
      clicks: false,
    });
    expect(trackingEnabled(org, { track_opens: false, track_clicks: true })).to.deep.equal({
      opens: false,
      clicks: true,
    });
  });
});

describe('tracking tokens', () => {
  it('round-trip and reject other kinds, other secrets and edits', () => {
    const url = unsubscribeUrl({ baseUrl: `${BASE}/`, secret: SECRET, emailId: 'em_1', recipientId: 'rcp_1' });
    expect(url.startsWith(`${BASE}/t/u/`)).to.equal(true);
    const token = url.slice(`${BASE}/t/u/`.length);
    expect(verifyTrackingToken(SECRET, token, 'u')).to.deep.equal({ kind: 'u', emailId: 'em_1', recipientId: 'rcp_1' });
    expect(verifyTrackingToken(SECRET, token, 'o')).to.equal(null);
    expect(verifyTrackingToken(`${SECRET}x`, token, 'u')).to.equal(null);
    const [body, sig] = token.split('.');
    const edited = Buffer.from(JSON.stringify(['u', 'em_1', 'rcp_2'])).toString('base64url');
    expect(verifyTrackingToken(SECRET, `${edited}.${sig}`, 'u')).to.equal(null);
    expect(verifyTrackingToken(SECRET, `${body}.${sig!.slice(0, -1)}`, 'u')).to.equal(null);
    expect(Buffer.from(sig!, 'base64url').length).to.equal(16);
  });

  it('List-Unsubscribe headers name the one-click URL', () => {
    const p = { baseUrl: BASE, secret: SECRET, emailId: 'em_1', recipientId: 'rcp_1' };
    expect(listUnsubscribeHeaders(p)).to.deep.equal({
      'List-Unsubscribe': `<${unsubscribeUrl(p)}>`,
      'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
    });
  });
});
