-- The reputation watch (DESIGN §20): the last answer of each blocklist zone about each sending
-- address (kind 'ip') and verified domain (kind 'domain'). `status` is the last answer;
-- `listed` the standing verdict, which an "unknown" answer (a time-out, a refusal, 127.255.255.x)
-- leaves as it was. A target is listed while any of its rows is.
create table rbl_checks (
  kind text not null check (kind in ('ip', 'domain')),
  target text not null,
  zone text not null,
  status text not null check (status in ('listed', 'clear', 'unknown')),
  listed boolean not null default false,
  -- The A record the zone answered (127.0.0.2 …), or the error of an unknown answer.
  answer text,
  checked_at timestamptz not null default now(),
  listed_since timestamptz,
  primary key (kind, target, zone)
);

-- A listed pool address leaves rotation while its pool has an address that is not listed.
alter table ip_pool_addresses add column listed_at timestamptz;

-- When the next check is due: the worker process that moves it runs the check (one at a time).
create table rbl_schedule (
  id boolean primary key default true check (id),
  next_at timestamptz not null default now()
);
insert into rbl_schedule default values;
