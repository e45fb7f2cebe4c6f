// The SMTP counterpart of measure.ts: a floor and Tern are loaded in alternating slices by a
// nodemailer pooled transport (`connections` connections, each kept open across messages), with
// `connections` messages in flight; figures are messages/s and medians of per-pair ratios.
import nodemailer, { type SendMailOptions, type Transporter } from 'nodemailer';
import { median } from './measure.js';

export interface SmtpTarget {
  name: string;
  port: number;
  auth?: { user: string; pass: string };
  /** The message to send (a fresh object per send). */
  message: () => SendMailOptions;
}

export interface SmtpSummary {
  floor: number;
  tern: number;
  ratio: number;
  failures: number;
}

interface SliceResult {
  rate: number;
  failures: number;
  firstError: string | null;
}

function transport(target: SmtpTarget, connections: number): Transporter {
  return nodemailer.createTransport({
    pool: true,
    maxConnections: connections,
    maxMessages: Infinity,
    host: '127.0.0.1',
    port: target.port,
    secure: false,
    requireTLS: true,
    tls: { rejectUnauthorized: false },
    auth: target.auth,
  });
}

async function slice(target: SmtpTarget, seconds: number, connections: number): Promise<SliceResult> {
  const t = transport(target, connections);
  const until = Date.now() + seconds * 1000;
  let sent = 0;
  let failures = 0;
  let firstError: string | null = null;
  const started = Date.now();
  const lane = async () => {
    while (Date.now() < until) {
      try {
        await t.sendMail(target.message());
        sent++;
      } catch (err) {
        failures++;
        firstError ??= (err as Error).message;
      }
    }
  };
  await Promise.all(Array.from({ length: connections }, lane));
  const elapsed = (Date.now() - started) / 1000;
  t.close();
  return { rate: sent / elapsed, failures, firstError };
}

export async function alternateSmtp(
  floor: SmtpTarget,
  tern: SmtpTarget,
  opts: { pairs: number; sliceSeconds: number; connections: number },
): Promise<SmtpSummary> {
  await slice(floor, 1, opts.connections);
  await slice(tern, 1, opts.connections);
  const floors: number[] = [];
  const terns: number[] = [];
  let failures = 0;
  for (let i = 0; i < opts.pairs; i++) {
    const f = await slice(floor, opts.sliceSeconds, opts.connections);
    const t = await slice(tern, opts.sliceSeconds, opts.connections);
    floors.push(f.rate);
    terns.push(t.rate);
    failures += f.failures + t.failures;
    for (const r of [f, t]) if (r.firstError) console.log(`  error: ${r.firstError}`);
    console.log(`  pair ${i + 1}  ${floor.name.padEnd(6)} ${f.rate.toFixed(0).padStart(7)} msg/s`);
    console.log(
      `          ${tern.name.padEnd(6)} ${t.rate.toFixed(0).padStart(7)} msg/s   ratio ${(f.rate > 0 ? t.rate / f.rate : 0).toFixed(2)}`,
    );
  }
  const summary: SmtpSummary = {
    floor: median(floors),
    tern: median(terns),
    ratio: median(floors.map((f, i) => (f > 0 ? terns[i]! / f : 0))),
    failures,
  };
  console.log(`  median  ${floor.name.padEnd(6)} ${summary.floor.toFixed(0).padStart(7)} msg/s`);
  console.log(`          ${tern.name.padEnd(6)} ${summary.tern.toFixed(0).padStart(7)} msg/s`);
  console.log(`  median of per-pair ratios: ${summary.ratio.toFixed(2)}`);
  if (failures > 0) console.log(`  WARNING: ${failures} messages were refused (figures are not valid)`);
  return summary;
}
