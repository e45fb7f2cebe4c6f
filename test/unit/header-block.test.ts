import { expect } from 'chai';
import { fieldsNamed, fieldValue, readHeaderBlock, removeFields } from '../../shared/mail/header-block.js';

function strip(raw: string, name: string): string {
  const buf = Buffer.from(raw, 'utf8');
  const r = readHeaderBlock(buf);
  if (!r.ok) throw new Error(r.reason);
  return removeFields(
    buf,
    fieldsNamed(r.block, (n) => n === name),
  ).toString('utf8');
}

describe('header block editor', () => {
  it('removes a folded field and nothing else (CRLF)', () => {
    const raw = 'From: a@b.c\r\nX-Tern-Tags: a=1,\r\n\tb=2,\r\n  c=3\r\nSubject: s\r\n\r\nX-Tern-Tags: in the body\r\n';
    expect(strip(raw, 'x-tern-tags')).to.equal('From: a@b.c\r\nSubject: s\r\n\r\nX-Tern-Tags: in the body\r\n');
  });

  it('handles bare LF lines, a first and a last field, and a message without a body', () => {
    expect(strip('X-A: 1\nFrom: a@b.c\nX-A: 2\n more\n\nbody', 'x-a')).to.equal('From: a@b.c\n\nbody');
    expect(strip('From: a@b.c\r\nX-A: 1', 'x-a')).to.equal('From: a@b.c\r\n');
  });

  it('unfolds values and keeps UTF-8', () => {
    const buf = Buffer.from('Subject: caf\u00e9\r\n  au lait\r\n\r\n');
    const r = readHeaderBlock(buf);
    expect(r.ok).to.equal(true);
    if (r.ok) expect(fieldValue(buf, r.block.fields[0]!)).to.equal('caf\u00e9  au lait');
  });

  it('finds the body after the blank line', () => {
    const buf = Buffer.from('A: 1\r\nB: 2\r\n\r\nbody');
    const r = readHeaderBlock(buf);
    expect(r.ok && buf.subarray(r.block.bodyStart).toString()).to.equal('body');
  });

  it('refuses what no mail system can read', () => {
    for (const raw of [
      '',
      '\r\nbody',
      ' folded first\r\n',
      'no colon here\r\n',
      ': empty name\r\n',
      'Bad Name: x\r\n',
    ]) {
      const r = readHeaderBlock(Buffer.from(raw));
      expect(r.ok, JSON.stringify(raw)).to.equal(false);
    }
  });

  it('tolerates blanks before the colon (obsolete syntax)', () => {
    const r = readHeaderBlock(Buffer.from('Subject : hi\r\n\r\n'));
    expect(r.ok && r.block.fields[0]!.name).to.equal('Subject');
  });
});
