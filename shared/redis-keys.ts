// Every Redis key and channel Tern uses, named in one place (STYLE: BullMQ habit). Each takes
// the configured prefix so that tests and several installs can share one Redis.

export function redisKeys(prefix: string) {
  return {
    /** Token bucket of one API key (rate limit). */
    rateLimit: (keyId: string) => `${prefix}:rl:${keyId}`,
    /** Pub/sub channel announcing key and org changes to every web process's key cache. */
    authInvalidate: `${prefix}:auth:invalidate`,
    /** Idempotency record of one (key, Idempotency-Key). */
    idempotency: (keyId: string, idemKey: string) => `${prefix}:idem:${keyId}:${idemKey}`,
    /** Token bucket pacing outbound delivery to one mailbox provider (slowed by throttle replies). */
    providerBucket: (provider: string) => `${prefix}:prov:${provider}`,
    /** Leases of the webhook deliveries in flight to one endpoint (per-endpoint concurrency cap). */
    webhookSlots: (webhookId: string) => `${prefix}:whslots:${webhookId}`,
    /** Token bucket of console login attempts from one IP or for one email (`ip:…`, `email:…`). */
    consoleLogin: (subject: string) => `${prefix}:console:login:${subject}`,
    /** BullMQ's own prefix for queues. */
    bullPrefix: `${prefix}:bull`,
  };
}

export type RedisKeys = ReturnType<typeof redisKeys>;
