-- Organizations, console users, sending domains, API keys and their tokens (DESIGN §3).

create table organizations (
  id text primary key,
  name text not null,
  sending_paused boolean not null default false,
  sending_paused_reason text,
  rate_limit_per_second integer not null default 10 check (rate_limit_per_second between 1 and 100000),
  rate_limit_burst integer not null default 20 check (rate_limit_burst between 1 and 100000),
  track_opens boolean not null default false,
  track_clicks boolean not null default false,
  daily_cap integer check (daily_cap is null or daily_cap >= 0),
  alert_rules jsonb not null default '[]',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create table users (
  id text primary key,
  org_id text not null references organizations (id) on delete cascade,
  email text not null,
  role text not null check (role in ('member', 'admin')),
  -- scrypt$N$r$p$<salt b64>$<hash b64>
  password_hash text not null,
  created_at timestamptz not null default now()
);
create unique index users_email_key on users (lower(email));
create index users_org_idx on users (org_id);

create table domains (
  id text primary key,
  org_id text not null references organizations (id) on delete cascade,
  name text not null check (name = lower(name)),
  status text not null default 'pending' check (status in ('pending', 'verified', 'failed')),
  records jsonb not null default '[]',
  dkim_selector text not null default 'tern',
  dkim_private_key text,
  dkim_public_key text,
  track_opens boolean,
  track_clicks boolean,
  verified_at timestamptz,
  last_checked_at timestamptz,
  created_at timestamptz not null default now()
);
create unique index domains_org_name_key on domains (org_id, name);
-- One organization owns a verified name: inbound mail for reply.<name> must route to one org.
create unique index domains_verified_name_key on domains (name) where status = 'verified';

create table api_keys (
  id text primary key,
  org_id text not null references organizations (id) on delete cascade,
  name text not null,
  mode text not null check (mode in ('live', 'test')),
  permission text not null check (permission in ('SEND', 'FULL', 'ADMIN')),
  -- Domain restriction: ids of domains of the same org; empty = unrestricted.
  domain_ids text[] not null default '{}',
  created_by text,
  created_at timestamptz not null default now(),
  last_used_at timestamptz,
  revoked_at timestamptz,
  check (permission <> 'ADMIN' or mode = 'live')
);
create index api_keys_org_idx on api_keys (org_id, id);

-- One or two live tokens per key: rotation keeps the old one until its expires_at.
create table api_key_tokens (
  id text primary key,
  key_id text not null references api_keys (id) on delete cascade,
  token_prefix text not null check (length(token_prefix) = 12),
  token_hash text not null check (token_hash ~ '^[0-9a-f]{64}$'),
  expires_at timestamptz,
  created_at timestamptz not null default now()
);
create unique index api_key_tokens_hash_key on api_key_tokens (token_hash);
create index api_key_tokens_key_idx on api_key_tokens (key_id);
