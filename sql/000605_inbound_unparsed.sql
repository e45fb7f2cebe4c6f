-- A received message over the parse limits (docs/inbound.md#parse-limits) is kept raw and marked
-- `unparsed`, with the limit it passed in `error`; it is never parsed again.
alter table inbound_messages drop constraint inbound_messages_status_check;
alter table inbound_messages add constraint inbound_messages_status_check
  check (status in ('stored', 'processed', 'failed', 'unparsed'));
