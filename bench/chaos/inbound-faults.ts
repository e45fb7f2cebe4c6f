// The inbound faults of `npm run chaos`: hostile mail to the MX while the load's outbound mail
// flows. Neither breaks a process, so the "repair" is the moment the last hostile message was
// accepted; the row's recovery is the outbound mail's. Each checks its own targets after the
// phase's quiet (notes under the table):
//   inbound-bomb  eight messages of 4,000 MIME parts (about 830 KB each, what left mailparser
//                 unsettled) to reply.<domain>, then a normal reply: the reply is processed and
//                 every bomb is kept raw, marked `unparsed`.
//   dmarc-flood   one reporter's DMARC reports, 10 past DMARC_REPORTER_HOURLY_MAX (30), 2,000
//                 records each, to dmarc@bounces.<domain>: 30 are read and stored, the rest kept
//                 raw and skipped.
import nodemailer from 'nodemailer';
import type postgres from 'postgres';
import { dmarcReportGz, partsBomb } from '../lib/inbound-mail.js';
import type { Fault } from './faults.js';
import type { ChaosStack } from './stack.js';

const BOMBS = 8;
const BOMB_PARTS = 4000;
/** DMARC_REPORTER_HOURLY_MAX's default: the chaos install runs with the defaults. */
const REPORTER_LIMIT = 30;
const FLOOD = REPORTER_LIMIT + 10;
const FLOOD_RECORDS = 2000;
/** Longest wait for the hostile mail's messages to settle after the phase's quiet. */
const SETTLE_MS = 240_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Sends one message to the MX; the inbound id from `250 … queued as inb_…`. */
async function toMx(s: ChaosStack, from: string, to: string, mail: { raw: string } | Record<string, unknown>) {
  const t = nodemailer.createTransport({ host: '127.0.0.1', port: s.mxPort, secure: false, ignoreTLS: true });
  try {
    const info = await t.sendMail({ envelope: { from, to: [to] }, ...mail });
    const id = /queued as (inb_[0-9A-Z]+)/.exec(info.response ?? '')?.[1];
    if (!id) throw new Error(`the MX did not queue the message: ${info.response}`);
    return id;
  } finally {
    t.close();
  }
}

interface InboundState {
  id: string;
  status: string;
  error: string | null;
  seconds: number | null;
}

/** The messages' states once none is `stored` any more (or the ceiling). */
async function settledStates(sql: postgres.Sql, ids: string[]): Promise<InboundState[]> {
  const deadline = Date.now() + SETTLE_MS;
  for (;;) {
    const rows = await sql<InboundState[]>`
      select id, status, error, extract(epoch from processed_at - created_at)::float as seconds
      from inbound_messages where id = any(${ids}) order by id`;
    if (rows.every((r) => r.status !== 'stored') || Date.now() > deadline) return rows;
    await sleep(1000);
  }
}

function inboundBomb(): Fault {
  let bombs: string[] = [];
  let reply = '';
  return {
    name: 'inbound-bomb',
    async inject(s) {
      const to = `support@reply.${s.org.domain}`;
      const raw = partsBomb(to, BOMB_PARTS);
      bombs = [];
      for (let i = 0; i < BOMBS; i++) bombs.push(await toMx(s, 'someone@example.net', to, { raw }));
      const at = Date.now();
      reply = await toMx(s, 'carol@example.net', to, {
        raw: `From: carol@example.net\r\nTo: ${to}\r\nSubject: Re: your receipt\r\n\r\nThanks.\r\n`,
      });
      return at;
    },
    async check(_s, sql) {
      const rows = await settledStates(sql, [...bombs, reply]);
      const r = rows.find((x) => x.id === reply);
      const marked = rows.filter((x) => bombs.includes(x.id) && x.status === 'unparsed').length;
      const missed: string[] = [];
      if (r?.status !== 'processed') missed.push(`inbound-bomb: the normal reply ended ${r?.status ?? 'missing'}`);
      if (marked !== BOMBS) missed.push(`inbound-bomb: ${BOMBS - marked} of ${BOMBS} bombs not marked unparsed`);
      const took = r?.seconds == null ? 'not processed' : `processed ${r.seconds.toFixed(1)} s after it was stored`;
      return {
        notes: [`inbound-bomb: ${marked}/${BOMBS} bombs kept raw and unparsed; the reply sent after them ${took}`],
        missed,
      };
    },
  };
}

function dmarcFlood(): Fault {
  let flood: string[] = [];
  let sentAt = 0;
  return {
    name: 'dmarc-flood',
    async inject(s) {
      const to = `dmarc@bounces.${s.org.domain}`;
      flood = [];
      for (let i = 0; i < FLOOD; i++) {
        const part = dmarcReportGz('flood.example', s.org.domain, `flood-${Date.now()}-${i}`, FLOOD_RECORDS);
        flood.push(
          await toMx(s, 'noreply-dmarc@flood.example', to, {
            from: 'noreply-dmarc@flood.example',
            to,
            subject: `Report domain: ${s.org.domain} Submitter: flood.example`,
            text: 'A DMARC aggregate report.',
            attachments: [part],
          }),
        );
      }
      sentAt = Date.now();
      return sentAt;
    },
    async check(_s, sql) {
      const rows = await settledStates(sql, flood);
      const read = rows.filter((r) => r.status === 'processed' && r.error === null).length;
      const skipped = rows.filter((r) => r.status === 'unparsed' && /^DMARC report skipped/.test(r.error ?? '')).length;
      const [last] = await sql<{ at: Date | null }[]>`
        select max(processed_at) as at from inbound_messages where id = any(${flood})`;
      const drained = last?.at
        ? `${((last.at.getTime() - sentAt) / 1000).toFixed(1)} s after the last was accepted`
        : 'never';
      const missed: string[] = [];
      if (read !== REPORTER_LIMIT || skipped !== FLOOD - REPORTER_LIMIT) {
        missed.push(
          `dmarc-flood: ${read} reports read and ${skipped} skipped, not ${REPORTER_LIMIT} and ${FLOOD - REPORTER_LIMIT}`,
        );
      }
      return {
        notes: [
          `dmarc-flood: ${FLOOD} reports from one reporter: ${read} read, ${skipped} skipped; all settled ${drained}`,
        ],
        missed,
      };
    },
  };
}

export const INBOUND_FAULTS: Fault[] = [inboundBomb(), dmarcFlood()];
