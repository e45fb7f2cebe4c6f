-- rspamd's verdict on an inbound message (DESIGN §20): {score, action, symbols} or
-- {status: "unchecked"}; null when no scorer is configured.
alter table inbound_messages add column spam jsonb;
