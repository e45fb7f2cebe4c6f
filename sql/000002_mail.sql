-- The mail model shared by the API, the delivery engine, webhooks, metrics and inbound:
-- messages, one row per recipient, the event log, suppressions and templates.

create table templates (
  id text primary key,
  org_id text not null references organizations (id) on delete cascade,
  slug text not null,
  name text not null,
  -- The draft (edited by PATCH); publishing copies it into template_versions.
  subject text,
  html text,
  text text,
  from_address text,
  -- Declared variables: [{key, type: string|number, fallback_value?}]; a key without fallback is required.
  variables jsonb not null default '[]',
  published_version integer,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz
);
create unique index templates_org_slug_key on templates (org_id, slug) where deleted_at is null;

create table template_versions (
  template_id text not null references templates (id) on delete cascade,
  version integer not null check (version >= 1),
  subject text,
  html text,
  text text,
  from_address text,
  variables jsonb not null default '[]',
  created_at timestamptz not null default now(),
  primary key (template_id, version)
);

create table emails (
  id text primary key,
  org_id text not null references organizations (id) on delete cascade,
  key_id text references api_keys (id) on delete set null,
  domain_id text not null references domains (id) on delete cascade,
  mode text not null check (mode in ('live', 'test')),
  source text not null default 'api' check (source in ('api', 'smtp', 'broadcast', 'automation')),
  -- As given by the caller, e.g. "Acme <hello@acme.test>"; from_email is the bare, lower-cased address.
  from_address text not null,
  from_email text not null,
  to_addresses text[] not null default '{}',
  cc_addresses text[] not null default '{}',
  bcc_addresses text[] not null default '{}',
  reply_to text[] not null default '{}',
  subject text not null default '',
  html text,
  text text,
  headers jsonb not null default '{}',
  tags jsonb not null default '[]',
  kind text,
  topic_id text,
  template_id text references templates (id) on delete set null,
  template_slug text,
  template_version integer,
  -- Message-ID header value without angle brackets (default <email_id>@<from domain>).
  message_id text not null,
  -- Raw MIME for SMTP relay messages (delivered as written), null for API sends.
  raw_mime bytea,
  status text not null default 'queued'
    check (status in ('scheduled', 'queued', 'processing', 'sent', 'canceled', 'failed')),
  scheduled_at timestamptz,
  last_event text,
  last_event_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index emails_org_list_idx on emails (org_id, mode, id desc);
create index emails_org_domain_idx on emails (org_id, domain_id, id desc);
create index emails_message_id_idx on emails (message_id);
create index emails_scheduled_idx on emails (scheduled_at) where status = 'scheduled';

create table email_attachments (
  email_id text not null references emails (id) on delete cascade,
  position integer not null,
  filename text not null,
  content_type text,
  content_id text,
  size integer not null,
  content bytea not null,
  primary key (email_id, position)
);

create table email_recipients (
  id text primary key,
  email_id text not null references emails (id) on delete cascade,
  org_id text not null,
  field text not null check (field in ('to', 'cc', 'bcc')),
  -- As given (may carry a display name); email is the bare, lower-cased address.
  address text not null,
  email text not null,
  domain text not null,
  provider text,
  status text not null default 'queued'
    check (status in ('scheduled', 'queued', 'sent', 'delivery_delayed', 'delivered', 'bounced',
                      'rejected', 'failed', 'canceled')),
  -- Why a non-terminal recipient waits (scheduled, paused, over cap, retry at T after reply R).
  wait_reason text,
  attempts integer not null default 0,
  next_attempt_at timestamptz,
  last_response text,
  last_event text,
  last_event_at timestamptz,
  delivered_at timestamptz,
  opened_at timestamptz,
  clicked_at timestamptz,
  complained_at timestamptz,
  unsubscribed_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (email_id, email)
);
create index email_recipients_email_idx on email_recipients (email_id);
create index email_recipients_pending_idx on email_recipients (status, next_attempt_at)
  where status in ('queued', 'sent', 'delivery_delayed');

-- The event log: every state change of a message or recipient, and inbound replies. Rows are
-- immutable; dedupe_key makes recording idempotent when a job runs twice.
create table events (
  id text primary key,
  org_id text not null references organizations (id) on delete cascade,
  mode text not null check (mode in ('live', 'test')),
  type text not null,
  email_id text references emails (id) on delete cascade,
  recipient_id text references email_recipients (id) on delete cascade,
  inbound_id text,
  recipient text,
  bounce_type text check (bounce_type in ('hard', 'soft', 'undetermined')),
  detail text,
  url text,
  -- Metrics dimensions, copied at record time so rollups need no joins.
  domain_id text,
  key_id text,
  template_id text,
  kind text,
  provider text,
  blocked boolean not null default false,
  data jsonb not null default '{}',
  dedupe_key text not null,
  published_at timestamptz,
  created_at timestamptz not null default now()
);
create unique index events_dedupe_key on events (dedupe_key);
create index events_email_idx on events (email_id, id);
create index events_unpublished_idx on events (id) where published_at is null;

create table suppressions (
  id text primary key,
  org_id text not null references organizations (id) on delete cascade,
  email text not null check (email = lower(email)),
  -- null = organization-wide
  domain_id text references domains (id) on delete cascade,
  reason text not null check (reason in ('hard_bounce', 'complaint', 'unsubscribe', 'manual')),
  source_email_id text,
  created_at timestamptz not null default now()
);
create unique index suppressions_org_email_domain_key on suppressions (org_id, email, coalesce(domain_id, ''));
