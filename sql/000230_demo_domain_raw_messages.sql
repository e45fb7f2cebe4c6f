-- The development launcher's demo domain and the development inbox (DESIGN §12).
--
-- `demo`: a domain that never leaves the machine (`demo.test`, created by `npm start`). Test keys
-- send from it as from any verified domain; live sends from it are refused (422 demo_domain).
alter table domains add column demo boolean not null default false;

-- The bytes a message was handed over with: composed, DKIM-signed, exactly as SMTP would carry
-- them. Test-mode messages are stored here by the delivery worker (the development inbox);
-- `recipient_id` is null for the one copy shared by every recipient, or names the recipient of a
-- copy that carries per-recipient content (tracking links, one-click unsubscribe).
create table email_raw_messages (
  email_id text not null references emails (id) on delete cascade,
  recipient_id text references email_recipients (id) on delete cascade,
  raw bytea not null,
  created_at timestamptz not null default now()
);
create unique index email_raw_messages_key on email_raw_messages (email_id, coalesce(recipient_id, ''));
create index email_raw_messages_recipient_idx on email_raw_messages (recipient_id);
