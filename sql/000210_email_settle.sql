-- The delivery sweeper settles messages whose recipients can no longer move (every one rejected,
-- failed or canceled) but which were left `queued` or `processing` (docs/api/emails.md, email
-- status). This partial index keeps its look-up to the few messages in those states.
create index emails_unsettled_idx on emails (updated_at) where status in ('queued', 'processing');
