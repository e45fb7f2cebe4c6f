-- A broadcast's counts.canceled: its messages that a cancel took back before delivery (their
-- email and recipients canceled). counts.sent keeps every message the broadcast handed to
-- delivery, canceled ones included.
alter table broadcasts add column count_canceled integer not null default 0;
