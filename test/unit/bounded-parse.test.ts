// The MIME shape count (shared/mail/mime-shape.ts) and the parse threads
// (shared/mail/bounded-parse.ts): every limit gives its outcome, and a thread ended by one (time,
// memory) is replaced, so the next message is parsed.
import { expect } from 'chai';
import { ParseThreads, type ParseLimits } from '../../shared/mail/bounded-parse.js';
import { mimeShape } from '../../shared/mail/mime-shape.js';
import { partsBomb } from '../../bench/lib/inbound-mail.js';

const LIMITS: ParseLimits = {
  maxBytes: 64 * 1024 * 1024,
  maxParts: 500,
  maxDepth: 50,
  timeoutMs: 60_000,
  memoryMb: 256,
};

const multipart = (boundary: string, ...parts: string[]) =>
  `Content-Type: multipart/mixed; boundary="${boundary}"\r\n\r\npreamble\r\n${parts.map((p) => `--${boundary}\r\n${p}\r\n`).join('')}--${boundary}--\r\n`;
const text = (s: string) => `Content-Type: text/plain\r\n\r\n${s}`;
const message = (body: string) => Buffer.from(`From: a@example.net\r\nSubject: s\r\nMIME-Version: 1.0\r\n${body}`);

describe('MIME shape', () => {
  it('counts the parts of every multipart and how deeply they nest', () => {
    expect(mimeShape(message(text('hello')), LIMITS)).to.deep.equal({ ok: true, parts: 0, depth: 0 });
    const flat = multipart('a', text('1'), text('2'), text('3'));
    expect(mimeShape(message(flat), LIMITS)).to.deep.equal({ ok: true, parts: 3, depth: 1 });
    // A multipart inside the second part, then a part after its close delimiter.
    const nested = multipart('a', text('1'), multipart('b', text('2'), text('3')), text('4'));
    expect(mimeShape(message(nested), LIMITS)).to.deep.equal({ ok: true, parts: 5, depth: 2 });
    // An embedded message's own multipart counts too; a line that only looks like a delimiter does not.
    const embedded = multipart(
      'a',
      `Content-Type: message/rfc822\r\n\r\nSubject: inner\r\n${multipart('c', text('--c is not a delimiter'), text('x'))}`,
    );
    expect(mimeShape(message(embedded), LIMITS)).to.deep.equal({ ok: true, parts: 3, depth: 3 });
  });

  it('stops at the first limit passed', () => {
    expect(mimeShape(Buffer.from(partsBomb('x@reply.acme.test', 501)), LIMITS)).to.deep.equal({
      ok: false,
      limit: 'parts',
      reason: 'more than 500 MIME parts',
    });
    // With a line budget the count gives up (null) rather than read on.
    expect(mimeShape(Buffer.from(partsBomb('x@reply.acme.test', 501)), LIMITS, 100)).to.equal(null);
    let deep = text('core');
    for (let i = 0; i < 51; i++) deep = multipart(`d${i}`, deep);
    expect(mimeShape(message(deep), LIMITS)).to.include({ ok: false, limit: 'depth' });
  });
});

describe('parse threads', function () {
  this.timeout(120_000);

  it('parses on a thread: Buffers come back as Buffers', async () => {
    const threads = new ParseThreads(LIMITS, 1);
    try {
      const raw = message(
        multipart(
          'a',
          text('hello'),
          'Content-Type: application/pdf; name=a.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\nJVBERi0=',
        ),
      );
      const out = await threads.parseMime(raw);
      if (out.type !== 'parsed') throw new Error(JSON.stringify(out));
      expect(out.mail.text?.trim()).to.equal('hello');
      expect(out.mail.attachments[0]!.filename).to.equal('a.pdf');
      expect(Buffer.isBuffer(out.mail.attachments[0]!.content)).to.equal(true);
      expect(out.mail.attachments[0]!.content.toString()).to.equal('%PDF-');
    } finally {
      await threads.close();
    }
  });

  it('ends a parse past the time limit and the memory limit, refuses a message past the size, and parses the next', async () => {
    const good = message(text('still parsing'));
    const expectGood = async (threads: ParseThreads) => {
      const out = await threads.parseMime(good);
      expect(out.type === 'parsed' && out.mail.text?.trim()).to.equal('still parsing');
    };
    // Past mailparser's own child-node limit (the count allowing it): its parse never settles.
    const slow = new ParseThreads({ ...LIMITS, maxParts: 100_000, timeoutMs: 1000 }, 1);
    try {
      expect(await slow.parseMime(Buffer.from(partsBomb('x@reply.acme.test', 4000)))).to.deep.equal({
        type: 'over',
        limit: 'time',
        reason: 'parsing took longer than 1 s',
      });
      await expectGood(slow);
    } finally {
      await slow.close();
    }
    const small = new ParseThreads({ ...LIMITS, memoryMb: 32 }, 1);
    try {
      const html = message(`Content-Type: text/html\r\n\r\n${'<p>hello world</p>\r\n'.repeat(1_500_000)}`);
      expect(await small.parseMime(html)).to.deep.equal({
        type: 'over',
        limit: 'memory',
        reason: 'parsing needed more than 32 MiB',
      });
      await expectGood(small);
      expect(await small.parseMime(Buffer.alloc(LIMITS.maxBytes + 1, 0x61))).to.include({
        type: 'over',
        limit: 'size',
      });
    } finally {
      await small.close();
    }
  });
});
