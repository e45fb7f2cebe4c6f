-- Indexes for the template and suppression lists (newest first per organization). Suppression
-- look-ups by address use suppressions_org_email_domain_key (org_id, email, …) from 000002.
create index templates_org_list_idx on templates (org_id, id desc) where deleted_at is null;
create index suppressions_org_list_idx on suppressions (org_id, id desc);
