-- An attempt's lease (docs/delivery.md "No double delivery"): the worker process holding an
-- attempt renews `attempt_expires_at` every few seconds; another job may take the attempt over
-- only once it has expired (a holder that died), seconds after the holder stopped renewing it.
alter table email_recipients add column attempt_expires_at timestamptz;

-- Attempts in flight during the upgrade keep the takeover delay they were leased with.
update email_recipients set attempt_expires_at = attempt_started_at + interval '15 minutes'
where attempt_started_at is not null;
