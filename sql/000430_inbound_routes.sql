-- Inbound routes (docs/inbound.md): a verified domain with inbound enabled receives on any of its
-- addresses, each recipient matched against its routes (webhook, forward, reject). Received
-- messages gain the reply without its quoted history, the `+tag` of the address, the sender's
-- SPF/DKIM/DMARC results, and downloadable attachments.

-- {"enabled": bool, "routes": [{"match", "action", "forward_to"?}]}; validated by the API.
alter table domains add column inbound jsonb not null default '{"enabled": false, "routes": []}';

alter table inbound_messages
  -- The EHLO name of the sending client (SPF's HELO identity).
  add column helo text,
  -- The part after `+` in the local part of the address that received the message.
  add column mailbox_hash text,
  -- The text without quoted history and signature.
  add column stripped_text text,
  -- {"spf", "dkim", "dmarc"}: the sender's authentication results (mailauth).
  add column auth jsonb,
  -- The route the message took: {"match", "action", "forward_to"?}; null for reply.<domain>.
  add column route jsonb,
  -- The email that carries a forwarded copy.
  add column forward_email_id text references emails (id) on delete set null;

-- Attachments are downloaded by id (GET /inbound/{id}/attachments/{attachment_id}). Rows stored
-- before get a random id of the same shape (`att_` and 26 Crockford base32 characters).
alter table inbound_attachments add column id text;
update inbound_attachments set id = 'att_' || upper(substr(replace(gen_random_uuid()::text, '-', ''), 1, 26));
alter table inbound_attachments alter column id set not null;
create unique index inbound_attachments_id_key on inbound_attachments (id);

-- A forwarded copy goes out with an SRS envelope sender (docs/inbound.md "Forwarding") instead of
-- each recipient's VERP address; a bounce to that address finds the copy by it.
alter table emails add column envelope_from text;
create index emails_envelope_from_idx on emails (org_id, lower(envelope_from)) where envelope_from is not null;
alter table emails drop constraint emails_source_check;
alter table emails add constraint emails_source_check
  check (source in ('api', 'smtp', 'broadcast', 'automation', 'forward'));
