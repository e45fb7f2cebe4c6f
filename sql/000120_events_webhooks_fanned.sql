-- Webhook fan-out marker: set in the transaction that creates an event's deliveries, so that an
-- event published (its fan-out job added) but whose job Redis then lost is found and fanned out
-- again by the fan-out sweeper. Events already published are taken as fanned out: re-running
-- their fan-out would hand old events to endpoints created since.
alter table events add column webhooks_fanned_at timestamptz;
update events set webhooks_fanned_at = published_at where published_at is not null;
create index events_unfanned_idx on events (published_at) where webhooks_fanned_at is null;
