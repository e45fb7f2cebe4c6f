-- The webhook fan-out drains the event log like the metrics rollup does: each pass claims the
-- oldest events not yet fanned out (order by id, skip locked). This index serves that scan; the
-- one on published_at served the sweeper it replaces. Events published before 000120 were
-- marked there, later ones by their fan-out, so the index starts with only in-flight events.
drop index if exists events_unfanned_idx;
create index events_webhooks_pending_idx on events (id) where webhooks_fanned_at is null;
