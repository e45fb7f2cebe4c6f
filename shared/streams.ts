// Delivery streams (DESIGN §14). Every message is `transactional` (one person's mail: a password
// reset, a receipt) or `broadcast` (mail to many: broadcasts, automations, bulk sends). The
// stream decides the message's place in the delivery queue (workers/delivery/fair-queue.ts:
// transactional first, broadcast capped at BROADCAST_MAX_SHARE of the slots while transactional
// waits) and is shown on the email, in webhook payloads and as a metrics facet.

export const STREAMS = ['transactional', 'broadcast'] as const;
export type Stream = (typeof STREAMS)[number];

export function isStream(v: unknown): v is Stream {
  return v === 'transactional' || v === 'broadcast';
}

/**
 * The stream a message takes when its sender names none: broadcasts and automations are
 * `broadcast`, everything else (API, batch, relay, forwards) `transactional`.
 */
export function defaultStream(source: string): Stream {
  return source === 'broadcast' || source === 'automation' ? 'broadcast' : 'transactional';
}
