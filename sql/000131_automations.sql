-- Automations (DESIGN §5 "Events and automations"): a trigger (a custom event name, or the
-- creation of a contact) and a list of steps (wait, send). Each trigger occurrence starts one
-- run per contact (unique key); a run advances one step per job of the `automation` queue.

create table automations (
  id text primary key,
  org_id text not null references organizations (id) on delete cascade,
  name text not null,
  trigger_type text not null check (trigger_type in ('event', 'contact_created')),
  -- the event name for trigger_type 'event'
  trigger_event text,
  steps jsonb not null,
  status text not null default 'enabled' check (status in ('enabled', 'disabled')),
  created_by_key_id text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  check ((trigger_type = 'event') = (trigger_event is not null))
);
create index automations_org_idx on automations (org_id, id desc);
create index automations_trigger_idx on automations (org_id, trigger_type, trigger_event) where status = 'enabled';

create table automation_runs (
  id text primary key,
  automation_id text not null references automations (id) on delete cascade,
  org_id text not null references organizations (id) on delete cascade,
  contact_id text not null references contacts (id) on delete cascade,
  -- what started the run: the contact_events id, or 'created' for contact creation
  occurrence text not null,
  mode text not null check (mode in ('live', 'test')),
  -- the steps as they were when the run started (an edit does not reshape runs under way)
  steps jsonb not null,
  -- event properties, offered to send steps' templates next to the contact's fields
  context jsonb not null default '{}',
  step integer not null default 0,
  status text not null default 'active' check (status in ('active', 'completed', 'stopped', 'failed')),
  next_at timestamptz,
  email_ids text[] not null default '{}',
  last_error text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (automation_id, contact_id, occurrence)
);
create index automation_runs_automation_idx on automation_runs (automation_id, id desc);
create index automation_runs_due_idx on automation_runs (next_at) where status = 'active';

-- Contact creation as a trigger: null until the automation engine has looked at the contact.
-- Contacts that existed before automations did are taken as seen.
alter table contacts add column automations_seen_at timestamptz;
update contacts set automations_seen_at = now();
create index contacts_automations_pending_idx on contacts (id)
  where automations_seen_at is null and automations_on_create;
