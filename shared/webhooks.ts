// Webhook rules shared by the API and the workers (DESIGN §7): signing secrets, URL rules, the
// retry schedule and how a delivery job is put on its queue.
import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import type { JobsOptions } from 'bullmq';
import { validationError } from './errors.js';
import { QUEUE_NAMES, type Queues } from './queues.js';
import { isForbiddenAddress } from './ssrf.js';

export const WEBHOOK_URL_MAX_LENGTH = 2048;

/** 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h: the wait before attempts 2..8; then `failed`. */
export const DEFAULT_RETRY_SCHEDULE_MS = [5e3, 300e3, 1800e3, 7200e3, 18000e3, 36000e3, 36000e3];

/** An endpoint failing without a single success for this long is disabled. */
export const DEFAULT_DISABLE_AFTER_MS = 5 * 24 * 3600e3;

export function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/**
 * The wait before the attempt after `attemptsMade`, or null when the schedule is exhausted.
 * Jitter of ±10% spreads the retries of one endpoint's burst of failures.
 */
export function retryDelay(schedule: number[], attemptsMade: number, random = Math.random): number | null {
  const base = schedule[attemptsMade - 1];
  if (base === undefined) return null;
  return Math.round(base * (0.9 + 0.2 * random()));
}

/** Checks an endpoint URL; throws 422 naming `field`. */
export function checkWebhookUrl(raw: string, allowPrivate: boolean, field = 'body.url'): string {
  if (raw.length > WEBHOOK_URL_MAX_LENGTH) {
    throw validationError(`${field} must be at most ${WEBHOOK_URL_MAX_LENGTH} characters`);
  }
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw validationError(`${field} must be an absolute URL`);
  }
  if (u.protocol !== 'https:' && !(allowPrivate && u.protocol === 'http:')) {
    throw validationError(
      `${field} must use https (plain http only when the install sets WEBHOOK_ALLOW_PRIVATE=true, for development)`,
    );
  }
  if (u.username !== '' || u.password !== '') throw validationError(`${field} must not carry credentials`);
  if (u.hostname === '') throw validationError(`${field} must name a host`);
  const host = u.hostname.replace(/^\[|\]$/g, '');
  if (
    !allowPrivate &&
    (host === 'localhost' || host.endsWith('.localhost') || (isIP(host) && isForbiddenAddress(host)))
  ) {
    throw validationError(`${field} must be a public address`);
  }
  u.hash = '';
  return u.toString();
}

/** Delivery jobs leave Redis when they end: Postgres keeps the record, and the id is free for a retry. */
const DELIVERY_JOB_OPTIONS: JobsOptions = { removeOnComplete: true, removeOnFail: true };

/** A delivery to enqueue: its id, and its endpoint's when known (the job carries it). */
export type DeliveryRef = string | { id: string; webhookId: string };

export async function enqueueDeliveries(
  queues: Pick<Queues, 'webhook-delivery'>,
  refs: DeliveryRef[],
  delayMs = 0,
): Promise<void> {
  if (refs.length === 0) return;
  await queues[QUEUE_NAMES.webhookDelivery].addBulk(
    refs.map((ref) => {
      const data = typeof ref === 'string' ? { deliveryId: ref } : { deliveryId: ref.id, webhookId: ref.webhookId };
      return {
        name: 'deliver',
        data,
        opts: { ...DELIVERY_JOB_OPTIONS, jobId: data.deliveryId, ...(delayMs > 0 ? { delay: delayMs } : {}) },
      };
    }),
  );
}

/**
 * Makes a delivery's job run now: adds it when Redis has none, promotes it when it waits delayed.
 * Returns false when a job for it is already running.
 */
export async function enqueueNow(queues: Pick<Queues, 'webhook-delivery'>, ref: DeliveryRef): Promise<boolean> {
  const queue = queues[QUEUE_NAMES.webhookDelivery];
  const id = typeof ref === 'string' ? ref : ref.id;
  const job = await queue.getJob(id);
  if (job) {
    const state = await job.getState();
    if (state === 'delayed') {
      await job.promote();
      return true;
    }
    if (state === 'active' || state === 'waiting' || state === 'prioritized') return state !== 'active';
    await job.remove().catch(() => {});
  }
  await enqueueDeliveries(queues, [ref]);
  return true;
}
