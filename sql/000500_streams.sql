-- Delivery streams (DESIGN §14): every message is `transactional` or `broadcast`. The stream
-- decides the message's place in the delivery queue (workers/delivery/fair-queue.ts) and is a
-- dimension of the metrics rollups (facet=stream). Existing messages take the stream their
-- source implies (broadcasts and automations: broadcast).
alter table emails add column stream text not null default 'transactional'
  check (stream in ('transactional', 'broadcast'));
update emails set stream = 'broadcast' where source in ('broadcast', 'automation');
create index emails_org_stream_idx on emails (org_id, mode, stream, id desc);

-- The full grain gains the dimension ('' for rows counted before it existed).
alter table metrics_daily add column stream text not null default '';
alter table metrics_daily drop constraint metrics_daily_pkey;
alter table metrics_daily add primary key (org_id, day, domain_id, provider, key_id, template_id, kind, stream);

alter table metrics_daily_facets drop constraint metrics_daily_facets_facet_check;
alter table metrics_daily_facets add constraint metrics_daily_facets_facet_check
  check (facet in ('provider', 'key', 'template', 'kind', 'stream'));
