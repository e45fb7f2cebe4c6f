// The bytes a message was handed over with (the development inbox, DESIGN §12): written by the
// delivery worker's test-mode path, read by GET /emails/{id}/raw and the console.
import type { Db } from './pool.js';
import { byteaArray } from './params.js';

export interface NewRawMessage {
  emailId: string;
  /** null: the one copy every recipient got; else the recipient of a personal copy. */
  recipientId: string | null;
  raw: Buffer;
}

/** Stores copies; one already stored (a job run twice, a retry) is kept as it was. */
export async function insertRawMessages(db: Db, rows: NewRawMessage[]): Promise<void> {
  if (rows.length === 0) return;
  await db`
    insert into email_raw_messages (email_id, recipient_id, raw)
    select * from unnest(${rows.map((r) => r.emailId)}::text[], ${rows.map((r) => r.recipientId) as string[]}::text[],
                         ${byteaArray(
                           db,
                           rows.map((r) => r.raw),
                         )}::bytea[])
    on conflict (email_id, coalesce(recipient_id, '')) do nothing`;
}

/**
 * The stored copy for a recipient: its own, else the shared one. With `recipientId` null, the
 * shared copy, else the first recipient's. Null when nothing is stored.
 */
export async function getRawMessage(
  db: Db,
  emailId: string,
  recipientId: string | null,
): Promise<{ recipient_id: string | null; raw: Buffer } | null> {
  const [row] = await db<{ recipient_id: string | null; raw: Buffer }[]>`
    select recipient_id, raw from email_raw_messages
    where email_id = ${emailId} and (${recipientId}::text is null or recipient_id is null or recipient_id = ${recipientId})
    order by (recipient_id is null) = (${recipientId}::text is null) desc, recipient_id
    limit 1`;
  return row ?? null;
}
