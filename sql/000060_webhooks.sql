-- Webhook endpoints, their deliveries (one per event and endpoint, with the exact body bytes
-- fixed at fan-out) and every attempt (DESIGN §7). Postgres is the record; BullMQ jobs (job id =
-- delivery id) only schedule attempts, and a sweeper re-enqueues due deliveries that lost theirs.

create table webhooks (
  id text primary key,
  org_id text not null references organizations (id) on delete cascade,
  url text not null,
  events text[] not null,
  description text,
  status text not null default 'enabled' check (status in ('enabled', 'disabled')),
  -- Why the platform disabled it (continuous failure); null when an admin did, or when enabled.
  disabled_reason text,
  -- Used as given (the `whsec_…` string bytes are the HMAC key), so it is stored as is.
  signing_secret text not null,
  -- During rotation the old secret still signs (a second v1= entry) until it expires.
  previous_secret text,
  previous_secret_expires_at timestamptz,
  -- Start of the current run of failed attempts; cleared by any success.
  failing_since timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index webhooks_org_idx on webhooks (org_id, id desc);

create table webhook_deliveries (
  id text primary key,
  webhook_id text not null references webhooks (id) on delete cascade,
  org_id text not null,
  -- The event delivered; a test send carries an event id of its own with no events row.
  event_id text not null,
  event_type text not null,
  body bytea not null,
  status text not null default 'pending' check (status in ('pending', 'succeeded', 'failed')),
  attempts integer not null default 0,
  next_attempt_at timestamptz,
  last_status_code integer,
  last_error text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  completed_at timestamptz,
  unique (event_id, webhook_id)
);
create index webhook_deliveries_list_idx on webhook_deliveries (webhook_id, id desc);
create index webhook_deliveries_due_idx on webhook_deliveries (next_attempt_at) where status = 'pending';

create table webhook_attempts (
  delivery_id text not null references webhook_deliveries (id) on delete cascade,
  attempt integer not null,
  started_at timestamptz not null default now(),
  -- null while the attempt runs, or when its worker died mid-attempt.
  finished_at timestamptz,
  status_code integer,
  latency_ms integer,
  error text,
  primary key (delivery_id, attempt)
);
