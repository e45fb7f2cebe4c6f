import { expect } from 'chai';
import { readCsv } from '../../shared/csv/read.js';
import { csvText, guardCell, unguardCell } from '../../shared/csv/write.js';

describe('CSV writer', () => {
  it('quotes as RFC 4180, writes booleans, dates and nulls, and guards formula cells', () => {
    const when = new Date('2026-01-02T03:04:05.678Z');
    expect(csvText([['a', 'b,c', 'say "hi"', 'two\nlines', 1.5, -3, true, false, null, undefined, when]])).to.equal(
      `a,"b,c","say ""hi""","two\nlines",1.5,-3,true,false,,,2026-01-02T03:04:05.678Z\r\n`,
    );
    expect(csvText([['=1+1', '+1', '-1', '@A1', '\tx', '\rx', "'=x", "'plain", 'x=1']])).to.equal(
      `"'=1+1","'+1","'-1","'@A1","'\tx","'\rx","''=x",'plain,x=1\r\n`,
    );
  });

  it('undoes its guard exactly when read back, and leaves other cells alone', async () => {
    const values = ['=1', "'=1", "''=1", "'", "'x", '-', "'-", 'plain', '', '@', "'\t"];
    for (const v of values) expect(unguardCell(guardCell(v)), JSON.stringify(v)).to.equal(v);
    const got = [];
    for await (const r of readCsv([Buffer.from(csvText([values]))])) got.push(r.cells);
    expect(got).to.deep.equal([values]);
  });
});
