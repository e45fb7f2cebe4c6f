// An MX server on an ephemeral port for a TestApi's database, and a raw SMTP session against it.
import { expect } from 'chai';
import type { AddressInfo } from 'node:net';
import { createMxServer, type MxDeps } from '../../api/smtp/mx-server.js';
import { createLogger } from '../../shared/logger.js';
import type { Reply } from './smtp-raw.js';
import { RawSmtp } from './smtp-raw.js';
import { startDmarcReportWorker } from '../../workers/dmarc-report.js';
import { startInboundWorker } from '../../workers/inbound.js';
import { track } from './resources.js';
import type { TestApi } from './stack.js';
import { workerDepsFor } from './workers.js';

export interface TestMx {
  port: number;
  close(): Promise<void>;
}

export async function startMx(api: TestApi, opts: Partial<MxDeps> & { maxBytes?: number } = {}): Promise<TestMx> {
  const server = createMxServer(
    {
      config: api.config,
      sql: api.deps.sql,
      queues: opts.queues ?? api.deps.queues,
      logger: opts.logger ?? createLogger('silent', 'mx-test'),
      prom: opts.prom ?? api.deps.prom,
      ...(opts.enqueueWaitMs !== undefined ? { enqueueWaitMs: opts.enqueueWaitMs } : {}),
    },
    { maxBytes: opts.maxBytes ?? 1024 * 1024 },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  return { port, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** An MX, an inbound worker and a DMARC report worker on the TestApi's install; close() stops them (tracked). */
export async function startMxWithWorker(
  api: TestApi,
  opts: Parameters<typeof startMx>[1] = {},
): Promise<{ port: number; close: () => Promise<void> }> {
  const mx = await startMx(api, opts);
  const deps = workerDepsFor(api);
  const workers = [startInboundWorker(deps), startDmarcReportWorker(deps)];
  const close = track('mx + inbound workers', async () => {
    await mx.close();
    await Promise.all(workers.map((w) => w.close()));
    await deps.close();
  });
  return { port: mx.port, close };
}

/** One SMTP transaction: EHLO, MAIL FROM, each RCPT, and DATA when a recipient was accepted. */
export async function smtpSession(
  port: number,
  rcpts: string[],
  message: string,
  from = 'someone@example.net',
): Promise<{ rcptReplies: Reply[]; data: Reply | null }> {
  const { client, greeting } = await RawSmtp.open(port);
  try {
    expect(greeting.code).to.equal(220);
    expect((await client.cmd('EHLO client.example.net')).code).to.equal(250);
    expect((await client.cmd(`MAIL FROM:<${from}>`)).code).to.equal(250);
    const rcptReplies: Reply[] = [];
    for (const r of rcpts) rcptReplies.push(await client.cmd(`RCPT TO:<${r}>`));
    const accepted = rcptReplies.some((r) => r.code === 250);
    const data = accepted ? await client.data(message) : null;
    return { rcptReplies, data };
  } finally {
    await client.close();
  }
}

/** The inbound id of a `250 Ok: queued as inb_…` reply. */
export function queuedId(reply: Reply | null): string {
  const m = reply ? /queued as (inb_[0-9A-Z]+)/.exec(reply.text) : null;
  if (!m) throw new Error(`not queued: ${reply ? `${reply.code} ${reply.text}` : 'no DATA'}`);
  return m[1]!;
}
