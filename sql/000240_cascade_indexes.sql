-- Indexes on the foreign keys that row deletions follow. Without one, every parent row deleted
-- makes Postgres scan the whole child table: DELETE /domains/{id} cascades to the domain's
-- messages, each message to its recipients, and each recipient then scanned `events` once, so a
-- domain with a real history ran into the statement timeout.
--
-- Deleting a domain: its messages, suppressions and broadcasts go, inbound messages keep their
-- row (domain_id and email_id set to null), and each recipient's events go.
create index emails_domain_idx on emails (domain_id);
create index events_recipient_idx on events (recipient_id) where recipient_id is not null;
create index suppressions_domain_idx on suppressions (domain_id) where domain_id is not null;
create index broadcasts_domain_idx on broadcasts (domain_id);
create index inbound_messages_domain_idx on inbound_messages (domain_id) where domain_id is not null;
create index inbound_messages_email_idx on inbound_messages (email_id) where email_id is not null;

-- Deleting a contact (its automation runs go), a segment or a topic (broadcasts naming it keep
-- their row, the reference set to null).
create index automation_runs_contact_idx on automation_runs (contact_id);
create index broadcasts_segment_idx on broadcasts (segment_id) where segment_id is not null;
create index broadcasts_topic_idx on broadcasts (topic_id) where topic_id is not null;

-- The unique key (email_id, email) already serves look-ups by email_id.
drop index email_recipients_email_idx;

-- Left without an index on purpose: references to rows that are never deleted one by one
-- (api_keys are revoked, templates soft-deleted, organizations only removed whole), where an
-- index would only slow the inserts of the busiest tables: emails.key_id, emails.template_id,
-- broadcasts.key_id, broadcasts.template_id, events.org_id, automation_runs.org_id.
