// The inbound MX (DESIGN §10, docs/inbound.md): accepts RCPT for the addresses
// shared/inbound-routing.ts routes (replies, VERP and SRS bounces, the unsubscribe mailto, DMARC
// reports, and the routes of domains with inbound enabled); refuses others with 550 5.1.1. A
// message that went through too many hops is refused at DATA (554 5.4.6). The raw message is
// stored in Postgres BEFORE the 250 (451 if that fails: never a silent drop) and then enqueued
// for the inbound worker; a message whose enqueue failed stays 'stored' and is picked up by the
// worker's sweeper.
import { SMTPServer, type SMTPServerAddress, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import type { Config } from '../../shared/config.js';
import { sessionsCloseMs } from '../../shared/shutdown.js';
import { insertInbound, type ReplyRoute } from '../../shared/db/inbound.js';
import type { Sql } from '../../shared/db/pool.js';
import { enqueueInbound } from '../../shared/inbound-jobs.js';
import type { Logger } from '../../shared/logger.js';
import { routeRecipient } from '../../shared/inbound-routing.js';
import { readHeaderBlock } from '../../shared/mail/header-block.js';
import type { PromRecorder } from '../../shared/prom/recorder.js';
import type { Queues } from '../../shared/queues.js';
import { countRefusal, countSession, counted } from './smtp-metrics.js';

export interface MxDeps {
  config: Config;
  sql: Sql;
  queues: Pick<Queues, 'inbound'>;
  logger: Logger;
  prom: PromRecorder;
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

async function readAll(stream: SMTPServerDataStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/**
 * A message that has crossed more relays than this is looping (RFC 5321 §6.3 asks for a limit;
 * Postfix's hopcount_limit is the same 50): refused instead of stored, and so never forwarded.
 */
export const MAX_RECEIVED_HEADERS = 50;

function tooManyHops(raw: Buffer): boolean {
  const read = readHeaderBlock(raw);
  if (!read.ok) return false;
  return read.block.fields.filter((f) => f.name.toLowerCase() === 'received').length > MAX_RECEIVED_HEADERS;
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
            helo: session.hostNameAppearsAs || null,
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

export function createMxServer(
  deps: MxDeps,
  opts: { maxBytes: number; tls?: { key: Buffer; cert: Buffer } },
): SMTPServer {
  const log = deps.logger;
  return new SMTPServer({
    name: deps.config.mxHost,
    // STARTTLS with the operator's certificate (MX_TLS_CERT/KEY); else smtp-server's built-in one.
    ...(opts.tls ?? {}),
    banner: 'Tern MX',
    authOptional: true,
    disabledCommands: ['AUTH'],
    size: opts.maxBytes,
    rejectOversized: true,
    maxClients: deps.config.mxMaxClients,
    logger: false,
    // Shutdown: open sessions get this long to finish (within SHUTDOWN_GRACE_SECONDS).
    closeTimeout: sessionsCloseMs(deps.config),
    onConnect: countSession(deps.prom, 'mx'),
    onRcptTo(address: SMTPServerAddress, session, done) {
      const callback = counted(deps.prom, 'mx', done);
      // RFC 5321 §4.5.3.1.10: 452 for recipients beyond the limit; the sender retries them later.
      const max = deps.config.mxMaxRecipients;
      if (session.envelope.rcptTo.length >= max) {
        return callback(new SmtpError(452, `4.5.3 Too many recipients (at most ${max} a message)`));
      }
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
    onData(stream, session, done) {
      const callback = counted(deps.prom, 'mx', done);
      readAll(stream)
        .then((raw) => {
          // rejectOversized answers 552 itself; never store a truncated message.
          if (stream.sizeExceeded) {
            countRefusal(deps.prom, 'mx', 552);
            return null;
          }
          if (tooManyHops(raw)) {
            log.warn({ event: 'INBOUND_LOOP_REFUSED', remote: session.remoteAddress }, 'too many Received headers');
            throw new SmtpError(554, '5.4.6 Routing loop detected: too many hops');
          }
          return store(deps, session, raw);
        })
        .then(
          (ids) => callback(null, ids ? `Ok: queued as ${ids.join(' ')}` : undefined),
          (err: unknown) => callback(err instanceof SmtpError ? err : new SmtpError(451, '4.3.0 Temporary failure')),
        );
    },
  });
}
