-- Scheduled DNS re-check of domains (docs/api/domains.md "Re-checks"): each domain a DNS check
-- verified or failed is looked up again about every DOMAIN_RECHECK_HOURS by the worker.
-- `next_check_at` is when it is due (null: not scheduled yet, or not re-checked at all); a worker
-- claims due domains by moving it a lease into the future, so that several worker processes check
-- each domain once per round. `recheck_failures` counts the definite failures of a verified
-- domain not yet confirmed: the first one only brings the next check forward.
alter table domains
  add column next_check_at timestamptz,
  add column recheck_failures smallint not null default 0;
create index domains_next_check_idx on domains (next_check_at) where next_check_at is not null;
