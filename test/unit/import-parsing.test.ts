// The pure parts of bulk imports: suppression rule syntax and keys, CSV records with their start
// lines (quoted line breaks, CRLF, blank lines, a BOM), and a contact row read through a mapping.
import { expect } from 'chai';
import { readContactRow, resolveMapping, type ImportMapping } from '../../shared/contact-import-mapping.js';
import { readCsv } from '../../shared/csv/read.js';
import { parseSuppressionPattern } from '../../shared/suppression-patterns.js';

describe('suppression rule syntax', () => {
  it('stores a rule with its look-up key and like form', () => {
    const cases: [string, string, string, string][] = [
      ['*@Example.COM', '*@example.com', 'example.com|', '%@example.com'],
      ['bounce-**@*', 'bounce-*@*', '*|bou', 'bounce-%@%'],
      ['ab*@*.corp.test', 'ab*@*.corp.test', '*.corp.test|ab', 'ab%@%.corp.test'],
      ['a_b%*@x.test', 'a_b%*@x.test', 'x.test|a_b', 'a\\_b\\%%@x.test'],
      ['abuse@*', 'abuse@*', '*|abu', 'abuse@%'],
    ];
    for (const [input, pattern, key, like] of cases) {
      const r = parseSuppressionPattern(input);
      expect(r, input).to.deep.equal({ ok: true, value: { pattern, key, like } });
    }
  });

  it('refuses everything else with a reason', () => {
    for (const bad of [
      'a?@x.test',
      '[a]*@x.test',
      'x*',
      '@x*',
      'a@b@*',
      'ann@x.test',
      '*@*',
      '*@-x.test',
      '*@x..test',
      'a"b*@x.test',
      '*@x*.test',
    ]) {
      const r = parseSuppressionPattern(bad);
      expect(r.ok, bad).to.equal(false);
    }
  });
});

describe('CSV records', () => {
  it('numbers each record by the line it starts on', async () => {
    const text = '\ufeffemail,note\r\na@x.test,"two\r\nlines"\r\n\r\nb@x.test,plain\nc@x.test,"q""uote"\n';
    const got = [];
    for await (const r of readCsv([Buffer.from(text)])) got.push([r.line, r.cells]);
    expect(got).to.deep.equal([
      [1, ['email', 'note']],
      [2, ['a@x.test', 'two\r\nlines']],
      [5, ['b@x.test', 'plain']],
      [6, ['c@x.test', 'q"uote']],
    ]);
  });

  it('ends records at CR, LF or CRLF, a CRLF split between chunks included', async () => {
    const chunks = ['email,note\ra@x.test,one\r', '\nb@x.test,"two\r', '\nlines"\nc@x.test,x\r\rd@x.test,y'];
    const got = [];
    for await (const r of readCsv(chunks.map((c) => Buffer.from(c)))) got.push([r.line, r.cells]);
    expect(got).to.deep.equal([
      [1, ['email', 'note']],
      [2, ['a@x.test', 'one']],
      [3, ['b@x.test', 'two\r\nlines']],
      [5, ['c@x.test', 'x']],
      [7, ['d@x.test', 'y']],
    ]);
  });
});

describe('contact rows through a mapping', () => {
  const mapping: ImportMapping = {
    email: 'E-mail',
    first_name: 'first',
    unsubscribed: 'out',
    properties: { n: { column: 'n', type: 'number' }, ok: { column: 'ok', type: 'boolean' }, s: 's' },
    topics: { top_1: 'news' },
  };
  const header = [' e-mail ', 'first', 'out', 'n', 'ok', 's', 'news'];
  const m = resolveMapping(mapping, header);

  it('reads a row, leaving empty cells out', () => {
    if (!m.ok) throw new Error(m.reason);
    expect(readContactRow(['Ann@X.test', 'Ann', '', '1e3', 'Yes', '', 'opt_out'], m.value)).to.deep.equal({
      email: 'ann@x.test',
      firstName: 'Ann',
      lastName: null,
      properties: { n: 1000, ok: true },
      unsubscribed: null,
      topics: [{ id: 'top_1', subscription: 'opt_out' }],
    });
  });

  it('fails a row whole with the reason', () => {
    if (!m.ok) throw new Error(m.reason);
    expect(readContactRow(['a@x.test', '', 'maybe', '', '', '', ''], m.value)).to.deep.equal({
      email: 'a@x.test',
      reason: 'unsubscribed must be true or false (or yes/no, 1/0), not "maybe"',
    });
    expect(readContactRow(['a@x.test', '', '', '12abc', '', '', ''], m.value))
      .to.have.property('reason')
      .that.matches(/property n must be a number/);
    expect(readContactRow(['a@x.test', '', '', '', '', '', 'later'], m.value))
      .to.have.property('reason')
      .that.matches(/topic top_1/);
  });

  it('names the columns a header lacks', () => {
    const r = resolveMapping({ email: 'email', last_name: 'Surname' }, ['email']);
    expect(r).to.deep.equal({ ok: false, reason: 'the header row has no column "Surname" (it has "email")' });
  });
});
