// webhook-delivery: one job per delivery (job id = delivery id, with its endpoint's id). Each run
// is one attempt: take an endpoint slot (one Redis call) → load the delivery and reserve the
// attempt (one statement) → sign and POST → record (one statement) → schedule the next attempt
// (the same job, delayed) or end. Postgres holds the truth; the job only says "look at this
// delivery now". A sweeper re-enqueues due deliveries whose job Redis lost.
import { DelayedError, Worker, type Job } from 'bullmq';
import {
  abandonDelivery,
  deliveryWebhookId,
  finishAttempt,
  reserveAttempt,
  type DeliveryWithWebhook,
} from '../shared/db/webhook-deliveries.js';
import { markWebhookFailing, markWebhookHealthy } from '../shared/db/webhooks.js';
import { fireOrgEvent } from '../shared/org-events.js';
import { QUEUE_NAMES, TAKEOVER_LOCKS, type WebhookDeliveryJob, WORKER_RETRY } from '../shared/queues.js';
import { OUTAGE_WAIT_MS, retryTransient } from '../shared/transient.js';
import { systemLookup, type LookupFn } from '../shared/webhooks/ssrf.js';
import { secretBox, type SecretBox } from '../shared/secrets.js';
import { sign } from '../shared/webhooks/signing.js';
import { standardWebhookHeaders } from '../shared/webhooks/standard-signing.js';
import { EndpointSlots } from '../shared/webhooks/slots.js';
import { DEFAULT_DISABLE_AFTER_MS, retryDelay } from '../shared/webhooks/rules.js';
import type { QueueConsumer, WorkerDeps } from './deps.js';
import { createWebhookAgent, postWebhook, type HttpAttemptResult } from './webhook-http.js';
import { startDeliverySweeper, sweepDeliveries } from './webhook-sweeper.js';
import { SweepTrigger } from './delivery/sweep-trigger.js';
import { logWorkerErrors } from './worker-errors.js';

export interface WebhookDeliveryOptions {
  /** Waits before attempts 2, 3, … (ms); after the last, the delivery is `failed`. */
  schedule?: number[];
  disableAfterMs?: number;
  timeoutMs?: number;
  maxResponseBytes?: number;
  /** Attempts in flight to one endpoint across all workers. */
  perEndpointLimit?: number;
  concurrency?: number;
  lookup?: LookupFn;
  sweepIntervalMs?: number;
  lockDurationMs?: number;
  stalledIntervalMs?: number;
}

/**
 * How often the sweeper looks for due deliveries without a job (lost with Redis, or whose job
 * failed while Redis was away): with its 10 s grace, such a delivery waits 20 s at most.
 */
export const WEBHOOK_SWEEP_MS = 10_000;
/** Grace of a triggered sweep: Redis just lost jobs or came back, so a due delivery has none to wait for. */
const TRIGGERED_GRACE_MS = 2000;

/** How long an attempt refused a slot waits for one this process holds (fast endpoints only). */
const SLOT_WAIT_MS = 100;

interface Ctx {
  deps: WorkerDeps;
  opts: Required<Omit<WebhookDeliveryOptions, 'lockDurationMs' | 'stalledIntervalMs'>>;
  slots: EndpointSlots;
  agent: ReturnType<typeof createWebhookAgent>;
  /** The worker is closing: an outage is no longer waited out. */
  closing: boolean;
}

/** The secrets that sign (stored sealed: shared/secrets.ts), the previous one until it expires. */
function signingSecrets(box: SecretBox, d: DeliveryWithWebhook, now: Date): string[] {
  const secrets = [box.open(d.signing_secret, 'webhook-secret')];
  if (d.previous_secret && d.previous_secret_expires_at && d.previous_secret_expires_at > now) {
    secrets.push(box.open(d.previous_secret, 'webhook-secret'));
  }
  return secrets;
}

/** The spec's headers, and the Standard Webhooks ones signed with the same secrets and time. */
function headersFor(box: SecretBox, brand: string, d: DeliveryWithWebhook): Record<string, string> {
  const now = new Date();
  const timestamp = Math.floor(now.getTime() / 1000);
  const secrets = signingSecrets(box, d, now);
  return {
    'content-type': 'application/json',
    'user-agent': `${brand}-webhooks/1`,
    [`${brand}-signature`]: sign(d.body, secrets, timestamp),
    [`${brand}-delivery-id`]: d.id,
    [`${brand}-event-type`]: d.event_type,
    ...standardWebhookHeaders(d.id, timestamp, d.body, secrets),
  };
}

/** Puts the running job back to sleep until `at` (same job id), ending this run. */
async function sleepUntil(job: Job, token: string | undefined, at: number): Promise<never> {
  await job.moveToDelayed(at, token);
  throw new DelayedError();
}

async function record(c: Ctx, d: DeliveryWithWebhook, attempt: number, r: HttpAttemptResult): Promise<number | null> {
  const ok = r.error === null;
  // An address the SSRF guard refuses stays refused: the delivery fails now, with that reason.
  const delay = ok || r.permanent ? null : retryDelay(c.opts.schedule, attempt);
  const nextAt = delay === null ? null : new Date(Date.now() + delay);
  await finishAttempt(c.deps.sql, d.id, attempt, {
    statusCode: r.statusCode,
    latencyMs: r.latencyMs,
    error: r.error,
    responseBody: r.responseBody,
    status: ok ? 'succeeded' : nextAt ? 'pending' : 'failed',
    nextAttemptAt: nextAt,
  });
  c.deps.prom.inc('tern_webhook_deliveries_total', [ok ? 'succeeded' : nextAt ? 'retrying' : 'failed']);
  if (ok) {
    if (d.failing_since) await markWebhookHealthy(c.deps.sql, d.webhook_id);
    return null;
  }
  const log = { deliveryId: d.id, webhookId: d.webhook_id, attempt, error: r.error };
  c.deps.logger.warn({ event: 'WEBHOOK_DELIVERY_FAILED', ...log, final: nextAt === null }, 'webhook attempt failed');
  const disabled = await markWebhookFailing(c.deps.sql, d.webhook_id, c.opts.disableAfterMs);
  if (disabled) {
    c.deps.logger.warn({ event: 'WEBHOOK_ENDPOINT_DISABLED', webhookId: d.webhook_id }, 'webhook endpoint disabled');
    await fireOrgEvent(c.deps, {
      orgId: disabled.org_id,
      type: 'webhook.disabled',
      data: { webhook_id: disabled.id, url: disabled.url, reason: disabled.disabled_reason },
    });
  }
  return nextAt?.getTime() ?? null;
}

/** Why a delivery got no attempt reserved, and what its job does about it. */
async function notReserved(c: Ctx, d: DeliveryWithWebhook | null, job: Job, token?: string): Promise<string> {
  if (!d || d.status !== 'pending') return 'nothing to do';
  if (d.webhook_status !== 'enabled') {
    await abandonDelivery(c.deps.sql, d.id, 'webhook endpoint is disabled');
    c.deps.prom.inc('tern_webhook_deliveries_total', ['abandoned']);
    return 'endpoint disabled';
  }
  // A duplicate wake-up (sweeper, a restarted worker) before the attempt is due waits for it.
  return await sleepUntil(job, token, d.next_attempt_at?.getTime() ?? Date.now() + 1000);
}

/**
 * One attempt, an outage of Postgres or Redis waited out in the job (the attempt starts again
 * once they answer) instead of failing it and leaving it to the timed sweep.
 */
async function attemptDeliveryThroughOutages(c: Ctx, job: Job<WebhookDeliveryJob>, token?: string): Promise<string> {
  return await retryTransient(() => attemptDelivery(c, job, token), {
    maxMs: OUTAGE_WAIT_MS,
    stopped: () => c.closing,
    onWait: (err) =>
      c.deps.logger.warn(
        { event: 'WEBHOOK_DELIVERY_WAITING_FOR_STORE', deliveryId: job.data.deliveryId, err },
        'waiting for Postgres/Redis',
      ),
  });
}

async function attemptDelivery(c: Ctx, job: Job<WebhookDeliveryJob>, token?: string): Promise<string> {
  const { deliveryId } = job.data;
  const webhookId = job.data.webhookId ?? (await deliveryWebhookId(c.deps.sql, deliveryId));
  if (!webhookId) return 'nothing to do';
  if (!(await c.slots.acquire(webhookId, deliveryId, SLOT_WAIT_MS))) {
    return await sleepUntil(job, token, Date.now() + 50 + Math.floor(Math.random() * 200));
  }
  let nextAt: number | null;
  try {
    const d = await reserveAttempt(c.deps.sql, deliveryId);
    if (!d || d.reserved === null) return await notReserved(c, d, job, token);
    const result = await postWebhook(
      c.agent,
      d.url,
      d.body,
      headersFor(secretBox(c.deps.config), c.deps.config.brand, d),
      c.opts,
    );
    nextAt = await record(c, d, d.reserved, result);
  } finally {
    c.slots.release(webhookId, deliveryId);
  }
  if (nextAt !== null) return await sleepUntil(job, token, nextAt);
  return 'done';
}

export function startWebhookDelivery(
  deps: WorkerDeps,
  options: WebhookDeliveryOptions = {},
): Worker<WebhookDeliveryJob> {
  const opts: Ctx['opts'] = {
    schedule: options.schedule ?? deps.config.webhookRetrySeconds.map((s) => s * 1000),
    disableAfterMs: options.disableAfterMs ?? DEFAULT_DISABLE_AFTER_MS,
    timeoutMs: options.timeoutMs ?? 5000,
    maxResponseBytes: options.maxResponseBytes ?? 64 * 1024,
    perEndpointLimit: options.perEndpointLimit ?? 32,
    concurrency: options.concurrency ?? 64,
    lookup: options.lookup ?? systemLookup,
    sweepIntervalMs: options.sweepIntervalMs ?? WEBHOOK_SWEEP_MS,
  };
  const agent = createWebhookAgent({ ...opts, allowPrivate: deps.config.webhookAllowPrivate });
  // The lease outlives the longest attempt, so only a dead worker's slot ever expires.
  const slots = new EndpointSlots(
    deps.redis,
    deps.redisKeys.webhookSlots,
    opts.perEndpointLimit,
    opts.timeoutMs + 5000,
  );
  const c: Ctx = { deps, opts, slots, agent, closing: false };
  const worker = new Worker<WebhookDeliveryJob>(
    QUEUE_NAMES.webhookDelivery,
    (job, token) => attemptDeliveryThroughOutages(c, job, token),
    {
      connection: deps.bull,
      prefix: deps.redisKeys.bullPrefix,
      ...WORKER_RETRY,
      concurrency: opts.concurrency,
      // A stalled job (its worker died) comes back for one more attempt rather than failing, and
      // within seconds of the lock lapsing: the sweeper leaves a job BullMQ still calls active.
      maxStalledCount: 100,
      lockDuration: options.lockDurationMs ?? TAKEOVER_LOCKS.lockDuration,
      stalledInterval: options.stalledIntervalMs ?? TAKEOVER_LOCKS.stalledInterval,
    },
  );
  worker.on('failed', (job, err) => {
    deps.logger.error(
      { event: 'WEBHOOK_DELIVERY_JOB_FAILED', deliveryId: job?.data.deliveryId, err },
      'delivery job failed',
    );
  });
  logWorkerErrors(worker, deps.logger, 'WEBHOOK_DELIVERY_WORKER_ERROR');
  const stopSweeper = startDeliverySweeper(deps, opts.sweepIntervalMs);
  // A Redis back after a break, or found empty, is swept at once rather than at the next timed
  // sweep (the grace only leaves a delivery committed this instant to its own enqueue).
  const trigger = new SweepTrigger(
    deps,
    async (why) => {
      try {
        const n = await sweepDeliveries(deps, TRIGGERED_GRACE_MS);
        deps.logger.info({ event: 'WEBHOOK_SWEEP_TRIGGERED', why, requeued: n }, 'swept at once');
      } catch (err) {
        deps.logger.warn({ event: 'WEBHOOK_SWEEP_FAILED', err, why }, 'webhook sweep failed');
      }
    },
    TRIGGERED_GRACE_MS + 1000,
    { sentinel: deps.redisKeys.webhookSentinel },
  );
  worker.on('closing', () => {
    c.closing = true;
    stopSweeper();
    void trigger.close();
  });
  worker.on('closed', () => void slots.flush());
  // Closing the idle sockets of a stopped worker: an error there has nothing left to affect.
  worker.on('closed', () => void agent.close().catch(() => {}));
  return worker;
}

export const webhookDeliveryConsumer: QueueConsumer = {
  queue: QUEUE_NAMES.webhookDelivery,
  start: (deps) => startWebhookDelivery(deps),
};
