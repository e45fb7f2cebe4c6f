-- IP pools (DESIGN §14): named sets of local addresses outbound delivery binds to, each saying
-- its own EHLO name; assignments to an organization, a domain or a stream (the most specific
-- wins: domain, then organization, then stream; no pool = the host's default address). Every
-- address warms up on its own schedule from `warmup_started_at` (counted in sending_counts under
-- the scope `ip:<address>`). `domains.warmup = false` marks an established domain: its own ramp
-- is skipped (the addresses' ramps still apply).

create table ip_pools (
  id text primary key,
  name text not null unique,
  -- Name said in EHLO from this pool's addresses; null: HELO_NAME.
  ehlo text,
  created_at timestamptz not null default now()
);

create table ip_pool_addresses (
  -- One spelling per address (shared/domains/own-addresses.ts normaliseIp); in one pool at most.
  address text primary key,
  pool_id text not null references ip_pools (id) on delete cascade,
  warmup_started_at timestamptz not null default now(),
  created_at timestamptz not null default now()
);
create index ip_pool_addresses_pool_idx on ip_pool_addresses (pool_id);

create table ip_pool_assignments (
  pool_id text not null references ip_pools (id) on delete cascade,
  org_id text references organizations (id) on delete cascade,
  domain_id text references domains (id) on delete cascade,
  stream text check (stream in ('transactional', 'broadcast')),
  created_at timestamptz not null default now(),
  check (num_nonnulls(org_id, domain_id, stream) = 1)
);
-- One pool per organization, per domain and per stream.
create unique index ip_pool_assignments_org_key on ip_pool_assignments (org_id) where org_id is not null;
create unique index ip_pool_assignments_domain_key on ip_pool_assignments (domain_id) where domain_id is not null;
create unique index ip_pool_assignments_stream_key on ip_pool_assignments (stream) where stream is not null;
create index ip_pool_assignments_pool_idx on ip_pool_assignments (pool_id);

alter table domains add column warmup boolean not null default true;
