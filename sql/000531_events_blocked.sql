-- The console's Queues page shows, per mailbox provider, the last block reply an organization's
-- mail got: a small partial index over the blocked events only.
create index events_blocked_idx on events (org_id, provider, id desc) where blocked;
