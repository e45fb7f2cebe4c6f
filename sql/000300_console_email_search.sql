-- The console's Emails page (docs/console.md): an organization's messages newest first, with
-- filters that must stay fast at a million messages (bench/console). Each index serves one
-- filter, with (org_id, mode) first so that it never reads another organization's rows:
--
-- - the state the page shows (the message's status, or its last event once handed over); the
--   expression is repeated verbatim by shared/db/email-search.ts (STATE_SQL);
create index emails_org_state_idx on emails (
  org_id, mode, (case when status = 'sent' then coalesce(substr(last_event, 7), 'sent') else status end), id desc);
-- - the sender address (exact, lower case);
create index emails_org_from_idx on emails (org_id, mode, from_email, id desc);
-- - whole words of the subject ('simple' configuration: no stemming, any language);
create index emails_subject_words_idx on emails using gin (to_tsvector('simple', subject));
-- - tags (name=value containment);
create index emails_tags_idx on emails using gin (tags jsonb_path_ops);
-- - a recipient's address, exact or by prefix (pattern ops: byte order, whatever the collation),
--   with the message id so that an exact match comes out newest first.
create index email_recipients_org_email_idx on email_recipients (org_id, email text_pattern_ops, email_id desc);
