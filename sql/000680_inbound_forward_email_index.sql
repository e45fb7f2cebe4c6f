-- An index on inbound_messages.forward_email_id (the message an inbound route forwarded it as):
-- deleting a domain deletes its messages, and each deleted message sets the reference to null in
-- the inbound messages that name it, which without an index scanned inbound_messages once per
-- message. Most inbound messages are not forwarded, hence the partial index.
create index inbound_messages_forward_email_idx on inbound_messages (forward_email_id)
  where forward_email_id is not null;
