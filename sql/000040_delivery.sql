-- Delivery engine bookkeeping (issue 4): the in-flight marker of an SMTP attempt (recorded
-- before talking SMTP, cleared with the result), the UTC day a recipient was counted against
-- the daily cap (so a re-run never counts it twice), and the per-day send counters.

alter table email_recipients
  add column attempt_started_at timestamptz,
  -- BullMQ job id holding the attempt: a re-run of the same job may take it over, another job may not.
  add column attempt_job text,
  add column cap_day date;

create index email_recipients_inflight_idx on email_recipients (attempt_started_at)
  where attempt_started_at is not null;

-- One row per (scope, UTC day): scope is 'org:<id>' or 'dom:<id>'. Live recipients only.
create table sending_counts (
  scope text not null,
  day date not null,
  count integer not null default 0 check (count >= 0),
  primary key (scope, day)
);
