// The event log (DESIGN §6): every state change of a message or recipient is one immutable row
// with a unique id, recorded idempotently (dedupe_key) and then published: a wake-up job for each
// of its consumers (webhook fan-out, metrics), which drain the log. Recording and publishing are
// separate steps: a row whose publication failed keeps published_at null and is re-published by
// `republishPending`.
import { eventRows, insertEvents, markEventsPublished, unpublishedEventIds } from './db/events.js';
import type { Db } from './db/pool.js';
import { MicroBatcher } from './micro-batch.js';
import type { Mode } from './keys.js';
import { QUEUE_NAMES, type Queues } from './queues.js';

export const EMAIL_EVENT_TYPES = [
  'email.sent',
  'email.delivered',
  'email.delivery_delayed',
  'email.bounced',
  'email.complained',
  'email.rejected',
  'email.opened',
  'email.clicked',
  'email.unsubscribed',
  'email.failed',
] as const;
/** The message events: an endpoint created without `events` subscribes to these. */
export const EVENT_TYPES = [...EMAIL_EVENT_TYPES, 'email.received'] as const;
/**
 * Organization events (DESIGN §15): about the organization rather than a message. Same envelope
 * and signing; delivered to the endpoints that name them, and emailed to the organization's admins.
 */
export const ORG_EVENT_TYPES = [
  'organization.paused',
  'organization.resumed',
  'webhook.disabled',
  'domain.failed',
  'domain.verified',
  // The reputation watch (DESIGN §20): a sending address or a domain on a blocklist, and off it.
  'ip.listed',
  'ip.delisted',
  'domain.listed',
  'domain.delisted',
] as const;
/** Every type an endpoint may subscribe to. */
export const WEBHOOK_EVENT_TYPES = [...EVENT_TYPES, ...ORG_EVENT_TYPES] as const;
export type EmailEventType = (typeof EMAIL_EVENT_TYPES)[number];
export type OrgEventType = (typeof ORG_EVENT_TYPES)[number];
export type EventType = (typeof EVENT_TYPES)[number] | OrgEventType;

export function isOrgEventType(type: string): type is OrgEventType {
  return (ORG_EVENT_TYPES as readonly string[]).includes(type);
}
export type BounceType = 'hard' | 'soft' | 'undetermined';

export interface NewEvent {
  orgId: string;
  mode: Mode;
  type: EventType;
  /** Makes recording idempotent: the same key twice records one row (e.g. `${recipientId}:delivered`). */
  dedupeKey: string;
  emailId?: string | null;
  recipientId?: string | null;
  inboundId?: string | null;
  recipient?: string | null;
  bounceType?: BounceType | null;
  detail?: string | null;
  url?: string | null;
  domainId?: string | null;
  keyId?: string | null;
  templateId?: string | null;
  kind?: string | null;
  provider?: string | null;
  blocked?: boolean;
  data?: Record<string, unknown>;
  createdAt?: Date;
}

export interface EventRow {
  id: string;
  org_id: string;
  mode: Mode;
  type: EventType;
  email_id: string | null;
  recipient_id: string | null;
  inbound_id: string | null;
  recipient: string | null;
  bounce_type: BounceType | null;
  detail: string | null;
  url: string | null;
  domain_id: string | null;
  key_id: string | null;
  template_id: string | null;
  kind: string | null;
  provider: string | null;
  blocked: boolean;
  data: Record<string, unknown>;
  dedupe_key: string;
  published_at: Date | null;
  created_at: Date;
}

/**
 * Inserts events; those whose dedupe_key already exists are skipped. Returns only the rows this
 * call created (publish those). Use inside the transaction that changes the state they describe.
 */
export async function recordEvents(db: Db, events: NewEvent[]): Promise<EventRow[]> {
  return await insertEvents(db, eventRows(events));
}

/**
 * Marks published events in batches (one UPDATE per flush instead of one per publication), for
 * busy publishers such as the delivery worker. published_at only spares `republishPending` work:
 * a mark lost in a crash means one more publication, which every consumer ignores by event id.
 */
export class PublishedMarks {
  private ids: string[] = [];
  private timer: NodeJS.Timeout | null = null;
  private inFlight: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Db,
    private readonly onError: (err: unknown) => void,
    private readonly delayMs = 50,
    private readonly maxBatch = 1000,
  ) {}

  add(ids: string[]): void {
    this.ids.push(...ids);
    if (this.ids.length >= this.maxBatch) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), this.delayMs);
  }

  /** Writes every pending mark; resolves when they (and earlier flushes) are written. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const ids = this.ids;
    this.ids = [];
    if (ids.length > 0) {
      this.inFlight = this.inFlight.then(() => markEventsPublished(this.db, ids)).catch(this.onError);
    }
    return this.inFlight;
  }
}

/**
 * Options of an event's jobs. Job ids = event ids: a second publication of the same event adds
 * nothing. Consumers are idempotent by event id, so retrying a failed job is always safe.
 */
export function eventJobOptions(eventId: string) {
  return { jobId: eventId, attempts: 10, backoff: { type: 'exponential', delay: 1000 } };
}

/**
 * Wakes the webhook fan-out and the metrics consumers (one job each per call: both drain every
 * pending event from Postgres), then marks the events published (at once, or through `marks` in
 * a later batch).
 */
export async function publishEvents(
  db: Db,
  queues: Pick<Queues, 'webhook-fanout' | 'metrics-rollup'>,
  eventIds: string[],
  marks?: PublishedMarks,
): Promise<void> {
  if (eventIds.length === 0) return;
  const wakeUp = { eventId: eventIds[0]! };
  const opts = eventJobOptions(eventIds[0]!);
  await Promise.all([
    queues[QUEUE_NAMES.webhookFanout].add('drain', wakeUp, opts),
    queues[QUEUE_NAMES.metrics].add('drain', wakeUp, opts),
  ]);
  if (marks) marks.add(eventIds);
  else await markEventsPublished(db, eventIds);
}

/**
 * `publishEvents` for a busy publisher (the delivery worker): the events of many jobs share one
 * pair of wake-up jobs (the consumers drain every pending event anyway) and one batch of marks.
 * `publish` resolves once the wake-ups are in Redis, as `publishEvents` does.
 */
export class EventPublisher {
  private readonly batcher: MicroBatcher<string[], null>;

  constructor(db: Db, queues: Pick<Queues, 'webhook-fanout' | 'metrics-rollup'>, marks: PublishedMarks) {
    this.batcher = new MicroBatcher(async (lists) => {
      await publishEvents(db, queues, lists.flat(), marks);
      return lists.map(() => null);
    });
  }

  async publish(eventIds: string[]): Promise<void> {
    if (eventIds.length > 0) await this.batcher.add(eventIds);
  }
}

/** Re-publishes events recorded more than `olderThanMs` ago whose publication never happened. */
export async function republishPending(
  db: Db,
  queues: Pick<Queues, 'webhook-fanout' | 'metrics-rollup'>,
  olderThanMs = 30_000,
  limit = 1000,
): Promise<number> {
  const ids = await unpublishedEventIds(db, olderThanMs, limit);
  await publishEvents(db, queues, ids);
  return ids.length;
}
