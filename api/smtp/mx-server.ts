// The inbound MX (DESIGN §10): accepts RCPT only for *@reply.<verified domain> and for VERP
// return-path addresses b+<token>@bounces.<verified domain> whose token verifies; refuses other
// recipients with 550 5.1.1. u+<token>@bounces.<domain> (the List-Unsubscribe mailto) too. The raw message is stored in Postgres BEFORE the 250 (451 if that
// fails: never a silent drop) and then enqueued for the inbound worker; a message whose enqueue
// failed stays 'stored' and is picked up by the worker's sweeper.
import { SMTPServer, type SMTPServerAddress, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import type { Config } from '../../shared/config.js';
import { insertInbound, verifiedDomainByName, type ReplyRoute } from '../../shared/db/inbound.js';
import type { Sql } from '../../shared/db/pool.js';
import type { Logger } from '../../shared/logger.js';
import { parseVerpToken } from '../../shared/mail/verp.js';
import type { Queues } from '../../shared/queues.js';

export interface MxDeps {
  config: Config;
  sql: Sql;
  queues: Pick<Queues, 'inbound'>;
  logger: Logger;
  /**
   * How long the 250 waits for the enqueue (default 2 s). The row is already durable; with Redis
   * down the job would wait for a connection forever, so the reply goes out and the sweeper
   * enqueues the row later.
   */
  enqueueWaitMs?: number;
}

interface Envelope {
  /** Accepted recipients grouped by organization: one stored message per organization. */
  routes: Map<string, { route: ReplyRoute; rcpts: string[] }>;
}

export class SmtpError extends Error {
  constructor(
    readonly responseCode: number,
    message: string,
  ) {
    super(message);
  }
}

function envelopeOf(session: SMTPServerSession): Envelope {
  const s = session as SMTPServerSession & { tern?: Envelope };
  s.tern ??= { routes: new Map() };
  return s.tern;
}

/** Which verified domain (and so which organization) a recipient address belongs to. */
export async function routeRecipient(deps: MxDeps, address: string): Promise<ReplyRoute | null> {
  const at = address.lastIndexOf('@');
  if (at < 1) return null;
  const local = address.slice(0, at);
  const host = address.slice(at + 1).toLowerCase();
  if (host.startsWith('reply.')) {
    return await verifiedDomainByName(deps.sql, host.slice('reply.'.length));
  }
  if (host.startsWith('bounces.')) {
    // b+<token>: VERP return path (DSNs, ARF); u+<token>: the List-Unsubscribe mailto.
    const m = /^[bu]\+(.+)$/i.exec(local);
    if (!m || !parseVerpToken(m[1]!, deps.config.secretKey)) {
      deps.logger.warn({ event: 'INBOUND_BAD_VERP', rcpt: address }, 'VERP token does not verify; refused');
      return null;
    }
    return await verifiedDomainByName(deps.sql, host.slice('bounces.'.length));
  }
  return null;
}

async function readAll(stream: SMTPServerDataStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

async function store(deps: MxDeps, session: SMTPServerSession, raw: Buffer): Promise<string[]> {
  const env = envelopeOf(session);
  const ids: string[] = [];
  // One transaction: either every organization's copy is durable, or none is (and the client retries).
  await deps.sql
    .begin(async (tx) => {
      for (const { route, rcpts } of env.routes.values()) {
        ids.push(
          await insertInbound(tx, {
            orgId: route.orgId,
            domainId: route.domainId,
            source: 'mx',
            mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : null,
            rcptTo: rcpts,
            remoteAddress: session.remoteAddress,
            raw,
          }),
        );
      }
    })
    .catch((err: unknown) => {
      deps.logger.error({ event: 'INBOUND_STORE_FAILED', err }, 'could not store inbound message');
      throw new SmtpError(451, '4.3.0 Could not store the message, try again later');
    });
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, deps.enqueueWaitMs ?? 2000)));
  await Promise.race([enqueueInbound(deps, ids), waited]);
  clearTimeout(timer);
  return ids;
}

/** Enqueues stored messages; a failure is logged only: the rows are durable and swept later. */
export async function enqueueInbound(deps: Pick<MxDeps, 'queues' | 'logger'>, ids: string[]): Promise<void> {
  await deps.queues.inbound
    .addBulk(
      ids.map((inboundId) => ({
        name: 'inbound',
        data: { inboundId },
        opts: { jobId: inboundId, attempts: 8, backoff: { type: 'exponential', delay: 2000 } },
      })),
    )
    .catch((err: unknown) => {
      deps.logger.warn(
        { event: 'INBOUND_ENQUEUE_FAILED', err, ids },
        'stored but not enqueued; the sweeper will process it',
      );
    });
}

export function createMxServer(deps: MxDeps, opts: { maxBytes: number }): SMTPServer {
  const log = deps.logger;
  return new SMTPServer({
    name: deps.config.mxHost,
    banner: 'Tern MX',
    authOptional: true,
    disabledCommands: ['AUTH'],
    size: opts.maxBytes,
    rejectOversized: true,
    logger: false,
    onRcptTo(address: SMTPServerAddress, session, callback) {
      routeRecipient(deps, address.address).then(
        (route) => {
          if (!route) return callback(new SmtpError(550, '5.1.1 No such recipient here'));
          const env = envelopeOf(session);
          const entry = env.routes.get(route.orgId) ?? { route, rcpts: [] };
          entry.rcpts.push(address.address);
          env.routes.set(route.orgId, entry);
          callback();
        },
        (err: unknown) => {
          log.error({ event: 'INBOUND_ROUTE_FAILED', err }, 'recipient look-up failed');
          callback(new SmtpError(451, '4.3.0 Temporary failure, try again later'));
        },
      );
    },
    onData(stream, session, callback) {
      readAll(stream)
        .then((raw) => {
          // rejectOversized answers 552 itself; never store a truncated message.
          if (stream.sizeExceeded) return null;
          return store(deps, session, raw);
        })
        .then(
          (ids) => callback(null, ids ? `Ok: queued as ${ids.join(' ')}` : undefined),
          (err: unknown) => callback(err instanceof SmtpError ? err : new SmtpError(451, '4.3.0 Temporary failure')),
        );
    },
  });
}
