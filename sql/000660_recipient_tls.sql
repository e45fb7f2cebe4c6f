-- The TLS of a recipient's last delivery attempt ({version, cipher, policy, mode}; DESIGN §19),
-- shown in the API's email object. Each attempt's own is in its event's data.
alter table email_recipients add column tls jsonb;
