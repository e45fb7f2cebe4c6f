-- Inbound mail taken by the MX process (replies on reply.<domain>, DSN bounces and ARF
-- complaints on the VERP return path) or the HTTP intake. The raw message is stored before the
-- SMTP 250; the inbound worker fills in the parsed fields.

create table inbound_messages (
  id text primary key,
  -- null until routed (the HTTP intake stores first, the worker routes by recipient)
  org_id text references organizations (id) on delete cascade,
  domain_id text references domains (id) on delete set null,
  source text not null check (source in ('mx', 'http')),
  -- reply | bounce | complaint | dropped (decided by the worker)
  kind text,
  mail_from text,
  rcpt_to text[] not null default '{}',
  remote_address text,
  raw bytea not null,
  size integer not null,
  status text not null default 'stored' check (status in ('stored', 'processed', 'failed')),
  error text,
  from_address text,
  to_addresses text[] not null default '{}',
  cc_addresses text[] not null default '{}',
  subject text,
  text text,
  html text,
  headers jsonb not null default '[]',
  message_id text,
  in_reply_to text,
  email_id text references emails (id) on delete set null,
  auto_reply boolean not null default false,
  created_at timestamptz not null default now(),
  processed_at timestamptz
);
create index inbound_messages_org_idx on inbound_messages (org_id, id desc);
create index inbound_messages_pending_idx on inbound_messages (id) where status = 'stored';

create table inbound_attachments (
  inbound_id text not null references inbound_messages (id) on delete cascade,
  position integer not null,
  filename text,
  content_type text not null,
  content_id text,
  size integer not null,
  content bytea not null,
  primary key (inbound_id, position)
);
