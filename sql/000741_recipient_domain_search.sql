-- The console's Emails page finds every message to a recipient domain (`to=@example.com`):
-- the domain part of each recipient's address, led by the organization, with the message id so
-- that the newest messages come first.
create index email_recipients_org_domain_idx
  on email_recipients (org_id, split_part(email, '@', 2), email_id desc);
