-- Contact imports and exports (DESIGN §16): each runs as a job of the `contacts` queue; the
-- uploaded file and the generated export live in Postgres (file_chunks), not on a disk.

-- Bytes of uploaded and generated files (contact imports, contact exports), in chunks of about
-- 1 MiB, so that any web or worker process reads what another one wrote and a restart loses
-- nothing. `owner_id` is the import or export id; the owner deletes its chunks when done.
create table file_chunks (
  owner_id text not null,
  seq integer not null,
  org_id text not null references organizations (id) on delete cascade,
  data bytea not null,
  primary key (owner_id, seq)
);
-- CSV compresses well, but pglz on every 1 MiB chunk costs more CPU than the disk it saves here.
alter table file_chunks alter column data set storage external;
create index file_chunks_org_idx on file_chunks (org_id);

create table contact_imports (
  id text primary key,
  org_id text not null references organizations (id) on delete cascade,
  key_id text,
  -- receiving: the upload is being stored (not visible through the API)
  status text not null check (status in ('receiving', 'queued', 'running', 'completed', 'failed')),
  -- sha256 hex of the file, and of the file + mapping + options (a re-upload finds the import);
  -- dedupe_key is cleared when an import fails, so that the same upload can be tried again
  content_hash text,
  dedupe_key text,
  mapping jsonb not null,
  trigger_automations boolean not null,
  file_bytes bigint not null default 0,
  file_chunks integer not null default 0,
  -- data records in the file (counted before any is applied), null until then
  total_rows bigint,
  -- records settled so far (a resumed job skips this many); the counters below add up to it
  rows bigint not null default 0,
  created bigint not null default 0,
  updated bigint not null default 0,
  skipped bigint not null default 0,
  failed bigint not null default 0,
  suppressed bigint not null default 0,
  -- why the import failed as a whole (a file that is not CSV, a missing column)
  error text,
  -- the worker running it; another job of the same import waits until the lease runs out
  lease_token text,
  lease_until timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  started_at timestamptz,
  completed_at timestamptz
);
create unique index contact_imports_dedupe_key on contact_imports (org_id, dedupe_key) where dedupe_key is not null;
create index contact_imports_org_idx on contact_imports (org_id, id desc) where status <> 'receiving';
create index contact_imports_open_idx on contact_imports (updated_at)
  where status in ('receiving', 'queued', 'running');

-- Rows of an import that were not applied, with their line in the file and why.
create table contact_import_errors (
  import_id text not null references contact_imports (id) on delete cascade,
  line bigint not null,
  email text,
  reason text not null,
  primary key (import_id, line)
);

create table contact_exports (
  id text primary key,
  org_id text not null references organizations (id) on delete cascade,
  key_id text,
  status text not null check (status in ('queued', 'running', 'completed', 'failed')),
  -- only the contacts of this segment (its filter when the export was asked for); null = all
  segment_id text,
  segment_filter jsonb,
  rows bigint not null default 0,
  file_bytes bigint not null default 0,
  file_chunks integer not null default 0,
  error text,
  lease_token text,
  lease_until timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  completed_at timestamptz
);
create index contact_exports_org_idx on contact_exports (org_id, id desc);
create index contact_exports_open_idx on contact_exports (updated_at) where status in ('queued', 'running');
