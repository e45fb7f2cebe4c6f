// What the delivery workers of one process (one per stream) share: the outbound connections (so
// OUTBOUND_CONNECTIONS_PER_HOST holds per process, whatever the stream), the provider pacing, the
// attempt leases and the journal (one process token), the published-event marks and the
// broadcast share. Made by the first stream worker of a process and closed when the last one
// closes.
import { EventPublisher, PublishedMarks } from '../../shared/events.js';
import { Outbound } from '../../shared/mail/outbound/index.js';
import { MtaSts, RedisPolicyStore } from '../../shared/mail/outbound/mta-sts.js';
import { createResolver, smarthostTarget } from '../../shared/mail/outbound/route.js';
import { SmarthostWatch } from '../../shared/mail/outbound/smarthost-watch.js';
import { trustAnchors } from '../../shared/mail/outbound/tls-policy.js';
import type { WorkerDeps } from '../deps.js';
import { BroadcastShare } from './broadcast-share.js';
import { HandOvers } from './handover.js';
import { DeliveryJournal } from './journal.js';
import { AttemptLeases } from './leases.js';
import { DeliveryLoader } from './load.js';
import { OutcomeRecorder } from './record.js';
import { DEFAULT_THROTTLE, ProviderThrottle, type ThrottleOptions } from './throttle.js';

export interface ProcessOptions {
  throttle?: ThrottleOptions;
  /** Longest wait for a free outbound connection (default 60 s). */
  acquireTimeoutMs?: number;
  /** Delivery slots per stream (default DELIVERY_CONCURRENCY). */
  concurrency?: number;
  /**
   * CA certificates (PEM) trusted beside Node's store for MX certificates and MTA-STS policy
   * hosts (a process started by the operator uses NODE_EXTRA_CA_CERTS instead).
   */
  trustedCa?: string[];
}

export interface DeliveryProcess {
  outbound: Outbound;
  throttle: ProviderThrottle;
  marks: PublishedMarks;
  leases: AttemptLeases;
  journal: DeliveryJournal;
  share: BroadcastShare;
}

/**
 * The steps whose statements are shared by a stream worker's concurrent jobs (one statement or
 * Redis round trip for a batch of jobs; each job still waits for its own writes to commit). Each
 * stream has its own, so a transactional message's statements never wait behind a batch of
 * broadcast mail.
 */
export interface Batched {
  loader: DeliveryLoader;
  handOvers: HandOvers;
  recorder: OutcomeRecorder;
  publisher: EventPublisher;
}

export function newBatched(deps: WorkerDeps, marks: PublishedMarks): Batched {
  return {
    loader: new DeliveryLoader(deps.sql),
    handOvers: new HandOvers(deps.sql),
    recorder: new OutcomeRecorder(deps.sql),
    publisher: new EventPublisher(deps.sql, deps.queues, marks),
  };
}

function smarthostWatch(deps: WorkerDeps): SmarthostWatch {
  const t = smarthostTarget(deps.config.smtpSmarthost!);
  return new SmarthostWatch(`${t.host.includes(':') ? `[${t.host}]` : t.host}:${t.port}`, deps.logger);
}

/** How often one domain's unavailable MTA-STS policy is logged at most. */
const POLICY_WARN_EVERY_MS = 5 * 60_000;

/** MTA-STS policies of recipient domains, cached in Redis for every worker. */
function mtaSts(deps: WorkerDeps, trustedCa: string[] | undefined): MtaSts {
  const warned = new Map<string, number>();
  const store = new RedisPolicyStore(deps.redis, (domain) => deps.redisKeys.mtaStsPolicy(domain));
  return new MtaSts(createResolver(deps.config.dnsServers), store, {
    ca: trustAnchors(trustedCa),
    onFetchError: (domain, id, err, cached) => {
      const now = Date.now();
      if (now - (warned.get(domain) ?? -Infinity) < POLICY_WARN_EVERY_MS) return;
      if (warned.size >= 10_000) warned.clear();
      warned.set(domain, now);
      deps.logger.warn(
        { event: 'MTA_STS_POLICY_UNAVAILABLE', domain, id, cached, err },
        cached
          ? 'MTA-STS policy not fetched; the cached one stays in force'
          : 'MTA-STS policy not fetched; delivering as without one',
      );
    },
  });
}

const processes = new WeakMap<WorkerDeps, { process: DeliveryProcess; users: number }>();

/** The process's shared delivery parts (made at the first call); pair with `leaveProcess`. */
export function joinProcess(deps: WorkerDeps, opts: ProcessOptions = {}): DeliveryProcess {
  const known = processes.get(deps);
  if (known) {
    known.users++;
    return known.process;
  }
  const leases = new AttemptLeases(deps.sql, deps.logger);
  const process: DeliveryProcess = {
    outbound: new Outbound(deps.config, {
      acquireTimeoutMs: opts.acquireTimeoutMs,
      smarthostWatch: deps.config.smtpSmarthost ? smarthostWatch(deps) : undefined,
      mtaSts: deps.config.smtpSmarthost ? undefined : mtaSts(deps, opts.trustedCa),
      trustedCa: opts.trustedCa,
    }),
    throttle: new ProviderThrottle(deps.redis, deps.redisKeys, opts.throttle ?? DEFAULT_THROTTLE),
    marks: new PublishedMarks(deps.sql, (err) =>
      deps.logger.warn(
        { event: 'EVENTS_MARK_FAILED', err },
        'marking events published failed; they will be republished',
      ),
    ),
    leases,
    journal: new DeliveryJournal(deps.config.deliveryJournalDir, leases.process),
    share: new BroadcastShare(opts.concurrency ?? deps.config.deliveryConcurrency, deps.config.broadcastMaxShare),
  };
  processes.set(deps, { process, users: 1 });
  return process;
}

/** The process's shared delivery parts, when a stream worker has made them. */
export function processOf(deps: WorkerDeps): DeliveryProcess | null {
  return processes.get(deps)?.process ?? null;
}

/** A stream worker closed; the last one closes the shared parts. */
export function leaveProcess(deps: WorkerDeps): void {
  const known = processes.get(deps);
  if (!known || --known.users > 0) return;
  processes.delete(deps);
  const p = known.process;
  p.share.detach();
  p.outbound.close();
  p.leases.close();
  p.journal.close();
  void p.marks.flush();
}
