-- The request log (DESIGN §21): each API request of an organization, with its bodies redacted,
-- written after the answer went out; kept `retention_request_log_days` (default 30).
create table request_logs (
  id text primary key,
  org_id text not null references organizations (id) on delete cascade,
  key_id text,
  mode text not null,
  request_id text not null,
  method text not null,
  path text not null,
  route text not null,
  query text not null default '',
  status integer not null,
  ip text,
  user_agent text,
  duration_ms integer not null,
  request_body jsonb,
  response_body jsonb,
  created_at timestamptz not null default now()
);

create index request_logs_org_id_idx on request_logs (org_id, mode, id desc);
create index request_logs_org_created_idx on request_logs (org_id, created_at);

alter table organizations add column retention_request_log_days integer not null default 30;
