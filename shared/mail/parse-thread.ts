// Entry of a parse thread (shared/mail/bounded-parse.ts starts it): parses the messages it is
// handed, one at a time, under the thread's memory limit: their parts and nesting counted to the
// end first (the parent counts only a message's first lines), then mailparser. The parent ends
// the thread when a parse takes too long. A DMARC report task also unpacks and reads the report
// attachment here, off the worker's event loop.
import { parentPort } from 'node:worker_threads';
import { simpleParser, type ParsedMail, type SimpleParserOptions } from 'mailparser';
import { readDmarcReport, reportPart } from './dmarc-report.js';
import { mimeShape } from './mime-shape.js';
import type { FromParseThread, ToParseThread } from './bounded-parse.js';

const port = parentPort!;

/** The parsed mail as plain data (no function of mailparser's attachment objects crosses over). */
function plain(mail: ParsedMail): ParsedMail {
  const attachments = mail.attachments.map((a) => {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(a)) if (typeof v !== 'function') out[k] = v;
    return out as unknown as ParsedMail['attachments'][number];
  });
  return { ...mail, attachments };
}

async function run(task: ToParseThread): Promise<FromParseThread> {
  const raw = Buffer.from(task.raw.buffer, task.raw.byteOffset, task.raw.byteLength);
  const shape = mimeShape(raw, task.limits);
  if (shape && !shape.ok) return { type: 'over', limit: shape.limit, reason: shape.reason };
  let mail: ParsedMail;
  try {
    // keepDeliveryStatus: the delivery-status part stays an attachment instead of body text.
    mail = await simpleParser(raw, { keepDeliveryStatus: true } as SimpleParserOptions);
  } catch (err) {
    return { type: 'failed', reason: `unparseable message: ${(err as Error).message}` };
  }
  if (task.kind === 'mime') return { type: 'parsed', mail: plain(mail) };
  const part = reportPart(
    mail.attachments.map((a) => ({ filename: a.filename ?? null, contentType: a.contentType, content: a.content })),
  );
  const read = part ? readDmarcReport(part) : { ok: false as const, reason: 'no zip, gzip or XML attachment' };
  // The attachments are the report itself: read here, not sent back.
  return { type: 'parsed', mail: { ...plain(mail), attachments: [] }, dmarc: read };
}

port.on('message', (task: ToParseThread) => {
  run(task).then(
    (out) => port.postMessage(out),
    (err: unknown) => port.postMessage({ type: 'failed', reason: `parse failed: ${(err as Error).message}` }),
  );
});
port.postMessage({ type: 'ready' } satisfies FromParseThread);
