-- Operations (DESIGN §15): the audit log, retention settings and the marks the purge leaves, and
-- the `system` source of the emails Tern sends its organizations' admins (organization events).

-- One row per change made with an ADMIN or FULL key or in the console. `detail` never holds a
-- secret (tokens, signing secrets, passwords): only field names and plain labels.
create table audit_log (
  id text primary key,
  org_id text not null references organizations (id) on delete cascade,
  actor_type text not null check (actor_type in ('key', 'user')),
  actor_id text not null,
  action text not null,
  target_type text not null,
  target_id text not null,
  ip text,
  detail jsonb not null default '{}',
  created_at timestamptz not null default now()
);
create index audit_log_org_idx on audit_log (org_id, id desc);
create index audit_log_org_action_idx on audit_log (org_id, action, id desc);
create index audit_log_org_actor_idx on audit_log (org_id, actor_id, id desc);

-- Retention: message content (bodies, raw MIME, attachments, inbound content) and the event log
-- (events, webhook deliveries and attempts) are purged after these many days.
alter table organizations
  add column retention_content_days integer not null default 30
    check (retention_content_days between 1 and 3650),
  add column retention_events_days integer not null default 90
    check (retention_events_days between 1 and 3650);

-- Set when the purge removed a message's content: GET /emails/{id} then answers "content": "purged".
alter table emails add column content_purged_at timestamptz;
alter table inbound_messages add column content_purged_at timestamptz;

-- The purge walks old rows by creation time.
create index emails_retention_idx on emails (org_id, created_at) where content_purged_at is null;
create index inbound_messages_retention_idx on inbound_messages (org_id, created_at)
  where content_purged_at is null;
create index events_retention_idx on events (org_id, created_at);
create index webhook_deliveries_retention_idx on webhook_deliveries (org_id, created_at);

alter table emails drop constraint emails_source_check;
alter table emails add constraint emails_source_check
  check (source in ('api', 'smtp', 'broadcast', 'automation', 'forward', 'system'));
