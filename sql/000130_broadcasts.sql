-- Broadcasts (DESIGN §5 "Broadcasts"): one message to every contact of a segment, fanned out in
-- batches by the `broadcast` queue. broadcast_recipients holds one row per (broadcast, contact)
-- reached so far, with what happened to it: its primary key is what makes a re-run batch
-- never send twice, and it names the contact behind each message for one-click unsubscribe.

create table broadcasts (
  id text primary key,
  org_id text not null references organizations (id) on delete cascade,
  key_id text references api_keys (id) on delete set null,
  -- test broadcasts send test messages; listed apart like emails
  mode text not null check (mode in ('live', 'test')),
  domain_id text not null references domains (id) on delete cascade,
  name text,
  from_address text not null,
  subject text,
  reply_to text[] not null default '{}',
  preview_text text,
  html text,
  text text,
  -- template sends render per contact; version null = the latest published when sending starts
  template_id text references templates (id) on delete set null,
  template_version integer,
  segment_id text references segments (id) on delete set null,
  topic_id text references topics (id) on delete set null,
  kind text,
  status text not null default 'draft'
    check (status in ('draft', 'scheduled', 'sending', 'sent', 'canceled')),
  scheduled_at timestamptz,
  started_at timestamptz,
  sent_at timestamptz,
  canceled_at timestamptz,
  -- the segment's filter as it was when sending started, so every batch walks one definition
  segment_filter jsonb,
  -- keyset position: the last contact id whose batch committed (null = none yet)
  cursor text,
  count_recipients integer not null default 0,
  count_sent integer not null default 0,
  count_skipped_unsubscribed integer not null default 0,
  count_skipped_suppressed integer not null default 0,
  count_skipped_topic integer not null default 0,
  count_failed integer not null default 0,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index broadcasts_org_list_idx on broadcasts (org_id, mode, id desc);
-- the broadcast sweeper's look-up: due scheduled sends and sends whose next batch was lost
create index broadcasts_active_idx on broadcasts (updated_at) where status in ('scheduled', 'sending');

create table broadcast_recipients (
  broadcast_id text not null references broadcasts (id) on delete cascade,
  contact_id text not null,
  -- deferred: a batch claims its contacts (this row) before it inserts their messages
  email_id text references emails (id) on delete set null deferrable initially deferred,
  outcome text not null
    check (outcome in ('sent', 'skipped_unsubscribed', 'skipped_suppressed', 'skipped_topic', 'failed')),
  detail text,
  created_at timestamptz not null default now(),
  primary key (broadcast_id, contact_id)
);
create index broadcast_recipients_email_idx on broadcast_recipients (email_id) where email_id is not null;
