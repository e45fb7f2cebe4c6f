// The one bridge between api/ and workers/: queue names and job payload types declared
// together, so producer and consumer share one type. Payloads carry ids, never secrets or
// message bodies.
import { Queue, type JobsOptions } from 'bullmq';
import { DeliveryQueue, type DeliveryJob, type DeliveryRequest } from './delivery-queue.js';
import type { Redis } from './redis.js';
import type { Stream } from './streams.js';

export const QUEUE_NAMES = {
  /** Deliver a transactional message (all its pending recipients, or those named). */
  delivery: 'delivery',
  /** Deliver a broadcast message: the same jobs as `delivery`, in a queue of the broadcast stream's own. */
  deliveryBroadcast: 'delivery-broadcast',
  /** One job per recorded event: build webhook deliveries for matching endpoints. */
  webhookFanout: 'webhook-fanout',
  /** One job per webhook delivery (job id = delivery id). */
  webhookDelivery: 'webhook-delivery',
  /** One job per recorded event: roll counters up into metrics_daily. */
  metrics: 'metrics-rollup',
  /** One job per stored inbound message: parse, thread, fire email.received / bounces. */
  inbound: 'inbound',
  /** One job per DMARC aggregate report mail (job id = inbound id): read on a parse thread, rate-limited per reporter. */
  dmarcReport: 'dmarc-report',
  /** One job per batch of a broadcast's send (job id = broadcast id + the cursor it starts at). */
  broadcast: 'broadcast',
  /** One job per step of an automation run (job id = run id + step), delayed by wait steps. */
  automation: 'automation',
  /** One job per contact import or export (job id = its id); the rows are in Postgres. */
  contactBulk: 'contact-bulk',
  /** The repeatable retention purge (one job per RETENTION_PURGE_SECONDS); the rows are in Postgres. */
  retention: 'retention',
} as const;

export type QueueName = (typeof QUEUE_NAMES)[keyof typeof QUEUE_NAMES];

export type { DeliveryJob } from './delivery-queue.js';

export interface EventJob {
  eventId: string;
}

export interface WebhookDeliveryJob {
  deliveryId: string;
  /** The endpoint (its slot is taken before the delivery is read); absent on older jobs. */
  webhookId?: string;
}

export interface InboundJob {
  inboundId: string;
}

export interface DmarcReportJob {
  inboundId: string;
}

export interface BroadcastJob {
  broadcastId: string;
  /** The cursor the batch starts after; a job whose cursor is no longer the row's is stale. */
  after: string | null;
}

export interface AutomationJob {
  runId: string;
  /** The step this job runs; a job for a step the run has left is stale. */
  step: number;
}

export interface ContactBulkJob {
  kind: 'import' | 'export';
  /** The import (`imp_…`) or export (`exp_…`) id. */
  id: string;
}

export interface RetentionJob {
  /** Only this organization (a test or an operator's run); every organization when absent. */
  orgId?: string;
}

export interface JobTypes {
  delivery: DeliveryJob;
  'delivery-broadcast': DeliveryJob;
  'webhook-fanout': EventJob;
  'webhook-delivery': WebhookDeliveryJob;
  'metrics-rollup': EventJob;
  inbound: InboundJob;
  'dmarc-report': DmarcReportJob;
  broadcast: BroadcastJob;
  automation: AutomationJob;
  'contact-bulk': ContactBulkJob;
  retention: RetentionJob;
}

type DeliveryQueueName = 'delivery' | 'delivery-broadcast';

export type Queues = { [K in Exclude<QueueName, DeliveryQueueName>]: Queue<JobTypes[K]> } & {
  /** The delivery queues add their jobs with fairness priorities (shared/delivery-queue.ts). */
  [K in DeliveryQueueName]: DeliveryQueue;
} & {
  close(): Promise<void>;
};

/** The queue of a stream's deliveries. */
export function deliveryQueue(queues: Pick<Queues, DeliveryQueueName>, stream: Stream): DeliveryQueue {
  return stream === 'broadcast' ? queues['delivery-broadcast'] : queues.delivery;
}

/** Adds each message's delivery job to its stream's queue (one `enqueue` per stream present). */
export async function enqueueMail(
  queues: Pick<Queues, DeliveryQueueName>,
  requests: DeliveryRequest[],
  opts: JobsOptions = {},
): Promise<void> {
  const transactional = requests.filter((r) => r.stream !== 'broadcast');
  const broadcast = requests.filter((r) => r.stream === 'broadcast');
  await Promise.all([
    queues.delivery.enqueue(transactional, opts),
    queues['delivery-broadcast'].enqueue(broadcast, opts),
  ]);
}

/**
 * Lock settings of the workers whose jobs must not wait long for a worker process that died
 * (SIGKILL, out of memory): delivery (both streams), webhook delivery, inbound, broadcast batches
 * and automation steps. A running job's lock is
 * renewed every half lock; once a dead process's lock lapses (15 s), the next stalled-job check
 * (every 5 s, by any live worker) puts the job back to wait. BullMQ's defaults (30 s, 30 s) let a
 * killed worker's jobs wait up to a minute after its restart.
 */
export const TAKEOVER_LOCKS = { lockDuration: 15_000, stalledInterval: 5_000 } as const;

/**
 * Every worker's pause before fetching again after a failed fetch (Redis away): BullMQ's default
 * of 15 s kept a worker idle that long after a Redis restart; a second is enough between tries.
 */
export const WORKER_RETRY = { runRetryDelay: 1000 } as const;

/** Jobs keep a bounded history in Redis; Postgres is the record. */
export const DEFAULT_JOB_OPTIONS: JobsOptions = {
  removeOnComplete: { count: 1000 },
  removeOnFail: { count: 5000 },
};

/**
 * Producer-side queues. `connection` should be a fail-fast client on the API side (an add
 * fails at once when Redis is down instead of hanging a request).
 */
export function createQueues(connection: Redis, bullPrefix: string): Queues {
  // No version check: BullMQ runs it once, as the queue is made, and keeps its failure. One INFO
  // past the fail-fast client's 2 s timeout (a busy Redis while the process starts) would make
  // every later add of that queue fail for the life of the process. `tern doctor` checks the
  // version and eviction policy, and the workers' own connections check them at start.
  const opts = { connection, prefix: bullPrefix, defaultJobOptions: DEFAULT_JOB_OPTIONS, skipVersionCheck: true };
  const make = <K extends QueueName>(name: K) => {
    const q = new Queue<JobTypes[K]>(name, opts);
    // Connection errors surface on the commands that fail (503 at the API); without a listener
    // BullMQ prints every reconnect attempt's stack trace to stderr while Redis is down.
    q.on('error', () => {});
    return q;
  };
  const delivery = new DeliveryQueue(QUEUE_NAMES.delivery, 'transactional', opts);
  const deliveryBroadcast = new DeliveryQueue(QUEUE_NAMES.deliveryBroadcast, 'broadcast', opts);
  for (const q of [delivery, deliveryBroadcast]) q.on('error', () => {});
  const queues = {
    delivery,
    'delivery-broadcast': deliveryBroadcast,
    'webhook-fanout': make('webhook-fanout'),
    'webhook-delivery': make('webhook-delivery'),
    'metrics-rollup': make('metrics-rollup'),
    inbound: make('inbound'),
    'dmarc-report': make('dmarc-report'),
    broadcast: make('broadcast'),
    automation: make('automation'),
    'contact-bulk': make('contact-bulk'),
    retention: make('retention'),
  };
  return {
    ...queues,
    async close() {
      await Promise.all(Object.values(queues).map((q) => q.close()));
    },
  };
}
