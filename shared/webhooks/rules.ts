// Webhook rules shared by the API and the workers (DESIGN §7): signing secrets, URL rules, the
// retry delay (the schedule is WEBHOOK_RETRY_SECONDS) and how a delivery job is put on its queue.
import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import type { JobsOptions } from 'bullmq';
import { validationError } from '../errors.js';
import { QUEUE_NAMES, type Queues } from '../queues.js';
import { isForbiddenAddress } from './ssrf.js';

export const WEBHOOK_URL_MAX_LENGTH = 2048;

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

/**
 * A host the URL parser has normalised (lower case; `127.1`, `0x7f000001` and `2130706433` read
 * as `127.0.0.1`) that names this machine or a private network: `localhost` and its subdomains,
 * with or without the root's trailing dot(s), or a forbidden IP literal (shared/webhooks/ssrf.ts).
 * Names that resolve to such addresses are refused when the delivery connects.
 */
export function isLocalHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').replace(/\.+$/, '');
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (isIP(host)) return isForbiddenAddress(host);
  // A trailing dot keeps the URL parser from reading an IPv4 literal ("127.0.0.1." is one).
  const v4 = /^[0-9a-fx.]+$/i.test(host) ? ipv4Literal(host) : null;
  return v4 !== null && isForbiddenAddress(v4);
}

/** The address a WHATWG parser gives a numeric host (`127.1`, `0x7f.1`), or null. */
function ipv4Literal(host: string): string | null {
  try {
    const h = new URL(`http://${host}/`).hostname;
    return isIP(h) === 4 ? h : null;
  } catch {
    return null;
  }
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
  if (!allowPrivate && isLocalHost(u.hostname)) throw validationError(`${field} must be a public address`);
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
    try {
      await job.remove();
    } catch (err) {
      // A worker took it between the two calls (its lock refuses the removal): it runs now.
      if ((await job.getState()) === 'active') return false;
      throw err;
    }
  }
  await enqueueDeliveries(queues, [ref]);
  return true;
}
