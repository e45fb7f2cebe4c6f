// Every Redis key and channel Tern uses, named in one place (STYLE: BullMQ habit). Each takes
// the configured prefix so that tests and several installs can share one Redis.
//
// On a Redis Cluster a command, script, MULTI or pipeline touching several keys needs them in one
// slot. A key's slot comes from its hash tag (the part inside the first `{…}`) when it has one:
// BullMQ's queues all carry `{bull}` (its scripts touch several keys of a queue, and a job moves
// between queues), the webhook slot leases `{whslots}` (released together in one pipeline). Every
// other key is only ever used alone (one key per script: rate-limit.lua, throttle.lua,
// idempotency.ts), so it keeps no tag and spreads over the cluster's masters. On a single Redis
// the names carry no tags, so that an install moving to this version keeps its queues.

export interface RedisKeyOptions {
  /** REDIS_URL names a Redis Cluster: keys used together get hash tags. */
  cluster?: boolean;
}

export function redisKeys(prefix: string, opts: RedisKeyOptions = {}) {
  const tag = (name: string) => (opts.cluster ? `{${name}}` : name);
  return {
    /** Token bucket of one API key (rate limit). */
    rateLimit: (keyId: string) => `${prefix}:rl:${keyId}`,
    /** Pub/sub channel announcing key and org changes to every web process's key cache. */
    authInvalidate: `${prefix}:auth:invalidate`,
    /** Idempotency record of one (key, Idempotency-Key). */
    idempotency: (keyId: string, idemKey: string) => `${prefix}:idem:${keyId}:${idemKey}`,
    /**
     * Token bucket pacing outbound delivery to one mailbox provider (slowed by throttle replies),
     * from one pool address (none: the host's default address).
     */
    providerBucket: (provider: string, address?: string | null) =>
      address ? `${prefix}:prov:${provider}:${address}` : `${prefix}:prov:${provider}`,
    /**
     * Leases of the webhook deliveries in flight to one endpoint (per-endpoint concurrency cap).
     * One hash tag for all endpoints: their releases leave in one pipeline (shared/webhooks/slots.ts).
     */
    webhookSlots: (webhookId: string) => `${prefix}:${tag('whslots')}:${webhookId}`,
    /** Token bucket of console login attempts from one IP or for one email (`ip:…`, `email:…`). */
    consoleLogin: (subject: string) => `${prefix}:console:login:${subject}`,
    /**
     * Set by delivery workers and never expiring: found missing, Redis lost its data (a flush, a
     * restart without persistence, a failover to an empty replica) and the lost jobs are swept back.
     */
    deliverySentinel: `${prefix}:delivery:sentinel`,
    /** The broadcast workers' own sentinel, as `deliverySentinel` is the delivery workers'. */
    broadcastSentinel: `${prefix}:broadcast:sentinel`,
    /** The same for webhook delivery workers: found missing, the webhook deliveries are swept back. */
    webhookSentinel: `${prefix}:webhook:sentinel`,
    /** JSON of the delivery sweeper's last finished run ({ finished_at, requeued }), for the console's Queues page. */
    deliverySweepLast: `${prefix}:delivery:sweep:last`,
    /**
     * The cluster-wide Prometheus counters and histogram buckets every process adds to
     * (shared/prom/recorder.ts) and the web process reads at GET /metrics: one hash, one slot.
     */
    prom: `${prefix}:prom`,
    /**
     * The email id a relay message (by digest of key, envelope and bytes) was stored under when
     * the relay could not confirm the store: the client's resend reuses it (api/smtp/relay-accept.ts).
     */
    relayUnconfirmed: (digest: string) => `${prefix}:relay:unconfirmed:${digest}`,
    /** The MTA-STS policy of one recipient domain (JSON, expires at its max_age), shared by every worker. */
    mtaStsPolicy: (domain: string) => `${prefix}:mtasts:${domain}`,
    /** DMARC reports one reporting domain sent one organization in one hour (workers/dmarc-report.ts). */
    dmarcReporter: (orgId: string, reporter: string, hour: number) =>
      `${prefix}:dmarc:reporter:${orgId}:${reporter}:${hour}`,
    /** BullMQ's own prefix for queues (on a cluster, every queue's keys in one slot). */
    bullPrefix: `${prefix}:${tag('bull')}`,
  };
}

export type RedisKeys = ReturnType<typeof redisKeys>;

/**
 * The fair-queueing counters of one delivery stream (shared/delivery-queue.ts): a hash of
 * organization id → its jobs waiting in that stream. Named after the delivery queue's qualified
 * name (BullMQ prefix + queue), so that it lives beside the queue's own keys.
 */
export function deliveryFairKey(queueQualifiedName: string, stream: string): string {
  return `${queueQualifiedName}:fair:${stream}`;
}
