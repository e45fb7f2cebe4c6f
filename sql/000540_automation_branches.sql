-- Automations that branch (DESIGN §16, issue 17 item 4). Steps may carry an `id` and name the
-- step that follows (`next`, a condition's `then`/`else`, a wait_for_event's `on_timeout`); the
-- API refuses graphs with loops, so a run visits each step at most once.
--
-- A run now stays on a step while it waits (a wait, or a wait_for_event until the event or its
-- timeout): step_started_at is when it entered the step, next_at when the step is due again.
-- `exited`: the contact left the run (unsubscribed or suppressed), exit_reason says which.
alter table automation_runs drop constraint automation_runs_status_check;
alter table automation_runs add constraint automation_runs_status_check
  check (status in ('active', 'completed', 'stopped', 'failed', 'exited'));
alter table automation_runs
  add column step_started_at timestamptz,
  -- the custom event name a wait_for_event step waits for; null otherwise
  add column waiting_for text,
  -- the contact_events id that ended that wait
  add column awaited_event_id text,
  add column exit_reason text;
create index automation_runs_status_idx on automation_runs (automation_id, status, id desc);
create index automation_runs_waiting_idx on automation_runs (contact_id, waiting_for)
  where status = 'active' and waiting_for is not null;

-- The run inspector: one row per step a run left, in order, with its times and outcome.
create table automation_run_steps (
  run_id text not null references automation_runs (id) on delete cascade,
  seq integer not null,
  -- the step's index in the run's steps, and its id when it has one
  step integer not null,
  step_id text,
  type text not null,
  started_at timestamptz not null,
  finished_at timestamptz not null default now(),
  outcome text not null,
  -- the index of the step taken next; null when the run ended there
  next_step integer,
  detail jsonb not null default '{}',
  primary key (run_id, seq)
);

-- Explicit segment membership (add_to_segment / remove_from_segment steps). A contact is in a
-- segment when a row includes it, or when the filter selects it and no row excludes it.
create table segment_members (
  segment_id text not null references segments (id) on delete cascade,
  contact_id text not null references contacts (id) on delete cascade,
  included boolean not null,
  updated_at timestamptz not null default now(),
  primary key (segment_id, contact_id)
);
create index segment_members_contact_idx on segment_members (contact_id);
