// The Prometheus metric families Tern exposes at GET /metrics (DESIGN §15), declared once: the
// recorder (shared/prom/recorder.ts) checks its calls against them, the web process's scrape
// (api/prometheus/) renders them, and the tests check docs/operations.md and the Grafana
// dashboard against this list. Names carry the `tern_` prefix and base units; counters end in
// `_total`.

/** Families every process records as they happen; kept cluster-wide in one Redis hash. */
export const RECORDED = {
  tern_http_request_duration_seconds: {
    type: 'histogram',
    help: 'Time from the request reaching the web process to its answer, by route template, method and status.',
    labels: ['route', 'method', 'status'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  },
  tern_rate_limited_total: {
    type: 'counter',
    help: 'Requests (api) and relay messages (relay) refused by a key rate limit.',
    labels: ['source'],
  },
  tern_emails_accepted_total: {
    type: 'counter',
    help: 'Emails stored for delivery, by where they came from and their delivery stream.',
    labels: ['source', 'stream'],
  },
  tern_delivery_attempts_total: {
    type: 'counter',
    help: 'Outbound SMTP attempts on one recipient (live mode), by outcome, mailbox provider and IP pool.',
    labels: ['outcome', 'provider', 'pool'],
  },
  tern_delivery_latency_seconds: {
    type: 'histogram',
    help: 'Time from acceptance (or the scheduled time) to the receiving server’s 250, live mode, by stream.',
    labels: ['stream'],
    buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 14400, 86400],
  },
  tern_webhook_deliveries_total: {
    type: 'counter',
    help: 'Webhook delivery attempts by result (succeeded, retrying, failed = last attempt failed, abandoned).',
    labels: ['result'],
  },
  tern_smtp_sessions_total: {
    type: 'counter',
    help: 'SMTP connections accepted by the relay and the MX.',
    labels: ['server'],
  },
  tern_smtp_refusals_total: {
    type: 'counter',
    help: 'SMTP commands refused by the relay and the MX, by reply class (4xx, 5xx) and code.',
    labels: ['server', 'class', 'code'],
  },
  tern_inbound_messages_total: {
    type: 'counter',
    help: 'Inbound messages processed, by kind (reply, forward, bounce, complaint, unsubscribe, dmarc_report, dropped, failed).',
    labels: ['kind'],
  },
} as const;

/**
 * Families computed at scrape time: HTTP request counts from the recorded latency histogram
 * (its per-series totals), the rest read from BullMQ and Postgres (the current state).
 */
export const SCRAPED = {
  tern_http_requests_total: {
    type: 'counter',
    help: 'HTTP requests answered by the web processes, by route template, method and status.',
    labels: ['route', 'method', 'status'],
  },
  tern_queue_jobs: {
    type: 'gauge',
    help: 'Jobs in each BullMQ queue by state (waiting, active, delayed, prioritized, completed, failed, …).',
    labels: ['queue', 'state'],
  },
  tern_queue_oldest_waiting_seconds: {
    type: 'gauge',
    help: 'How long the oldest job ready to run has been waiting for a worker (0 when none waits).',
    labels: ['queue'],
  },
  tern_queue_workers: {
    type: 'gauge',
    help: 'Worker connections consuming each queue (BullMQ getWorkers).',
    labels: ['queue'],
  },
  tern_webhook_backlog: {
    type: 'gauge',
    help: 'Webhook deliveries pending (waiting for their first attempt or a retry).',
    labels: [],
  },
  tern_webhook_oldest_pending_seconds: {
    type: 'gauge',
    help: 'Age of the oldest pending webhook delivery (0 when none is pending).',
    labels: [],
  },
  tern_organizations_paused: {
    type: 'gauge',
    help: 'Organizations whose sending is paused (by an admin or an alert rule).',
    labels: [],
  },
  tern_rbl_listed: {
    type: 'gauge',
    help: 'Whether a blocklist zone lists a sending address (kind ip) or a verified domain (kind domain): 1 yes, 0 no (the reputation watch).',
    labels: ['kind', 'target', 'zone'],
  },
  tern_scrape_source_up: {
    type: 'gauge',
    help: 'Whether the scrape could read each of its sources (redis, queues, postgres): 1 yes, 0 no.',
    labels: ['source'],
  },
} as const;

/** Process metrics (prom-client's default metrics) of the web process that answered, prefixed. */
export const PROCESS_PREFIX = 'tern_';

/**
 * The process families of prom-client's default metrics (with PROCESS_PREFIX), as documented in
 * docs/operations.md; the scrape test checks that each one is present.
 */
export const PROCESS_FAMILIES = [
  'tern_process_cpu_seconds_total',
  'tern_process_resident_memory_bytes',
  'tern_process_start_time_seconds',
  'tern_process_open_fds',
  'tern_nodejs_eventloop_lag_seconds',
  'tern_nodejs_heap_size_used_bytes',
  'tern_nodejs_gc_duration_seconds',
] as const;

export type RecordedName = keyof typeof RECORDED;
export type CounterName = {
  [K in RecordedName]: (typeof RECORDED)[K]['type'] extends 'counter' ? K : never;
}[RecordedName];
export type HistogramName = {
  [K in RecordedName]: (typeof RECORDED)[K]['type'] extends 'histogram' ? K : never;
}[RecordedName];

type Strings<T> = { [I in keyof T]: string };

/** The label values of a recorded family, in the order of its `labels`. */
export type LabelValues<F extends RecordedName> = Strings<(typeof RECORDED)[F]['labels']>;

/** Every family name GET /metrics serves (recorded, scraped and the documented process ones). */
export function allFamilyNames(): string[] {
  return [...Object.keys(RECORDED), ...Object.keys(SCRAPED), ...PROCESS_FAMILIES];
}
