-- Console sessions (docs/console.md): the cookie carries a random id, the table only its SHA-256,
-- so a read of this table does not hand out live sessions. Expiry slides: every request moves
-- expires_at to now + 12 h. csrf_token is the synchronizer token of the session's POST forms.
create table console_sessions (
  id_hash text primary key,
  user_id text not null references users (id) on delete cascade,
  csrf_token text not null,
  created_at timestamptz not null default now(),
  last_seen_at timestamptz not null default now(),
  expires_at timestamptz not null,
  ip text,
  user_agent text
);
create index console_sessions_user_idx on console_sessions (user_id);
create index console_sessions_expires_idx on console_sessions (expires_at);
