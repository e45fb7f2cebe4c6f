-- The first 1 KiB of each webhook attempt's answer body (the console's delivery log shows it
-- beside the status code). Text, decoded as UTF-8 with bad bytes replaced.
alter table webhook_attempts add column response_body text;
