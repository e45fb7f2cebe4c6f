-- GET /metrics reads the webhook backlog and the age of its oldest delivery at every scrape:
-- count(*) and min(created_at) of the pending deliveries, answered from this small partial
-- index alone, however many delivered rows the table holds.
create index webhook_deliveries_pending_age_idx on webhook_deliveries (created_at) where status = 'pending';
