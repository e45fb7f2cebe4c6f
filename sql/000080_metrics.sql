-- Daily metrics rollups (DESIGN §8). metrics_daily is the full grain: (org, UTC day, domain,
-- provider, key, template, kind) → ten counters. Reads never touch it on the hot path: the same
-- rollup transaction also maintains metrics_daily_totals (per domain, and domain '' = the
-- organization total) and metrics_daily_facets (one row per facet value), so a 90-day query
-- reads at most 90 × (facet values) rows whatever the mail volume.
-- Dimensions use '' for "none" instead of null so that the primary keys never admit duplicates.

create table metrics_daily (
  org_id text not null,
  day date not null,
  domain_id text not null default '',
  provider text not null default '',
  key_id text not null default '',
  template_id text not null default '',
  kind text not null default '',
  sent bigint not null default 0,
  delivered bigint not null default 0,
  bounced_hard bigint not null default 0,
  bounced_soft bigint not null default 0,
  complained bigint not null default 0,
  opened bigint not null default 0,
  clicked bigint not null default 0,
  unsubscribed bigint not null default 0,
  delayed bigint not null default 0,
  blocked bigint not null default 0,
  primary key (org_id, day, domain_id, provider, key_id, template_id, kind)
);

create table metrics_daily_totals (
  org_id text not null,
  day date not null,
  domain_id text not null, -- '' = all domains of the organization
  sent bigint not null default 0,
  delivered bigint not null default 0,
  bounced_hard bigint not null default 0,
  bounced_soft bigint not null default 0,
  complained bigint not null default 0,
  opened bigint not null default 0,
  clicked bigint not null default 0,
  unsubscribed bigint not null default 0,
  delayed bigint not null default 0,
  blocked bigint not null default 0,
  primary key (org_id, domain_id, day)
);

create table metrics_daily_facets (
  org_id text not null,
  day date not null,
  domain_id text not null, -- '' = all domains of the organization
  facet text not null check (facet in ('provider', 'key', 'template', 'kind')),
  facet_key text not null, -- '' = none
  sent bigint not null default 0,
  delivered bigint not null default 0,
  bounced_hard bigint not null default 0,
  bounced_soft bigint not null default 0,
  complained bigint not null default 0,
  opened bigint not null default 0,
  clicked bigint not null default 0,
  unsubscribed bigint not null default 0,
  delayed bigint not null default 0,
  blocked bigint not null default 0,
  primary key (org_id, domain_id, facet, day, facet_key)
);

-- Exactly-once: the rollup marks the events it counts in the same transaction as the upserts.
alter table events add column metrics_counted_at timestamptz;
create index events_metrics_pending_idx on events (id) where metrics_counted_at is null;

-- Opens and clicks count once per recipient.
create table metrics_uniques (
  recipient_id text not null,
  type text not null,
  primary key (recipient_id, type)
);
