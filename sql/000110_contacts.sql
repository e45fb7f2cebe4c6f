-- Contacts, topics, segments and custom events (DESIGN §5 "Contacts, topics, segments" and
-- "Events and automations"). Contacts belong to an organization, not to a domain: a
-- domain-restricted key may upsert them (list signup) but not change their subscriptions.

create table contacts (
  id text primary key,
  org_id text not null references organizations (id) on delete cascade,
  -- lower case; one contact per address and organization
  email text not null,
  first_name text,
  last_name text,
  properties jsonb not null default '{}',
  -- global unsubscribe: no broadcast reaches the contact, whatever its topics say
  unsubscribed boolean not null default false,
  -- false when a domain-restricted key created the contact (SPEC "Domain restriction" 4): such a
  -- signup must not start contact_created automations
  automations_on_create boolean not null default true,
  created_by_key_id text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (org_id, email)
);
create index contacts_org_idx on contacts (org_id, id desc);
create index contacts_properties_idx on contacts using gin (properties jsonb_path_ops);

create table topics (
  id text primary key,
  org_id text not null references organizations (id) on delete cascade,
  name text not null,
  description text,
  -- opt_in: contacts receive the topic unless they opted out; opt_out: only those who opted in
  default_subscription text not null check (default_subscription in ('opt_in', 'opt_out')),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index topics_org_idx on topics (org_id, id desc);

-- A contact's explicit choice for a topic; no row = the topic's default.
create table contact_topics (
  contact_id text not null references contacts (id) on delete cascade,
  topic_id text not null references topics (id) on delete cascade,
  subscription text not null check (subscription in ('opt_in', 'opt_out')),
  updated_at timestamptz not null default now(),
  primary key (contact_id, topic_id)
);
create index contact_topics_topic_idx on contact_topics (topic_id, subscription);

create table segments (
  id text primary key,
  org_id text not null references organizations (id) on delete cascade,
  name text not null,
  -- condition tree, validated and compiled to SQL by the API (shared/db/segment-filter.ts)
  filter jsonb not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index segments_org_idx on segments (org_id, id desc);

-- Custom events posted through POST /events (not the message event log `events`). The
-- automation engine consumes rows whose consumed_at is null.
create table contact_events (
  id text primary key,
  org_id text not null references organizations (id) on delete cascade,
  contact_id text not null references contacts (id) on delete cascade,
  name text not null,
  properties jsonb not null default '{}',
  key_id text,
  mode text not null check (mode in ('live', 'test')),
  created_at timestamptz not null default now(),
  consumed_at timestamptz
);
create index contact_events_org_idx on contact_events (org_id, id desc);
create index contact_events_pending_idx on contact_events (id) where consumed_at is null;
create index contact_events_contact_idx on contact_events (contact_id, id desc);
