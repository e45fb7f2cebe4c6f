// Mailbox providers as the console's Queues page sees them: the last block reply each one gave an
// organization's mail (index events_blocked_idx, over the blocked events only).
import type { Db } from './pool.js';

export interface BlockReply {
  provider: string;
  /** The SMTP reply (the event's data.response). */
  response: string | null;
  recipient: string | null;
  created_at: Date;
}

export async function lastBlockReplies(db: Db, orgId: string, limit = 50): Promise<BlockReply[]> {
  return await db<BlockReply[]>`
    select distinct on (provider) provider, data->>'response' as response, recipient, created_at
    from events where org_id = ${orgId} and blocked and provider is not null
    order by provider, id desc limit ${limit}`;
}
