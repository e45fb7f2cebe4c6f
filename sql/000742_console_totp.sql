-- A second factor for console sign-in (DESIGN §22): a TOTP secret per user (RFC 6238: SHA-1,
-- 6 digits, 30 s), confirmed by a first code before it is required; the time step of the last
-- code accepted (a code is good once); the SHA-256 of each unused recovery code; and an
-- organization setting that requires it of admins.
alter table users
  add column totp_secret text,
  add column totp_pending_secret text,
  add column totp_enabled_at timestamptz,
  add column totp_last_step bigint,
  add column totp_recovery_hashes text[] not null default '{}';
alter table organizations add column require_admin_totp boolean not null default false;
