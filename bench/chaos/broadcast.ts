// The broadcasts of the load: every BROADCAST_EVERY_TICKS ticks, a broadcast to a segment of
// BROADCAST_CONTACTS contacts of its own (`c<n>@b<k>.bc.test`, stored in SQL with their segment
// and broadcast through the API, then sent), so that broadcasts are being sent, stored in
// batches and delivered whenever a fault hits. Each recipient is one send of the load whose key
// is its address (the sink records broadcast messages by recipient: they carry no
// `X-Chaos-Send` header), with the outcome of the broadcast's send request: a broadcast whose
// send was accepted must reach all its recipients, once.
import type postgres from 'postgres';
import { newId } from '../../shared/ids.js';
import type { Outcome } from './load.js';
import { BROADCAST_DOMAIN } from './sink.js';
import type { ChaosStack } from './stack.js';

/** Recipients of each broadcast. */
export const BROADCAST_CONTACTS = 10;
/** One broadcast every this many ticks of the load (2 s at the default rate). */
export const BROADCAST_EVERY_TICKS = 40;

class Refused extends Error {}

/** `what` names the step in the error (the path holds ids: one error kind per broadcast). */
async function api(s: ChaosStack, what: string, path: string, body: unknown): Promise<{ id: string }> {
  const res = await fetch(`${s.apiUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${s.org.token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  if (!res.ok) throw new Refused(`${what}: ${res.status}`);
  return JSON.parse(text) as { id: string };
}

/**
 * Stores the contacts and segment of broadcast `k`, creates and sends it. Resolves with the
 * recipients' addresses and the send's outcome; with no outcome when a step before the send
 * failed (the install was down): nothing was sent.
 */
export async function sendBroadcast(
  s: ChaosStack,
  sql: postgres.Sql,
  k: string,
): Promise<{ recipients: string[]; outcome: Outcome | null; error?: string }> {
  const domain = `b${k}.${BROADCAST_DOMAIN}`;
  const recipients = Array.from({ length: BROADCAST_CONTACTS }, (_, i) => `c${i}@${domain}`);
  let id: string;
  try {
    // Seen by automations already: the contacts are the broadcast's audience, nothing else.
    await sql`
      insert into contacts (id, org_id, email, automations_seen_at)
      select id, ${s.org.id}, email, now()
      from unnest(${recipients.map(() => newId('ct'))}::text[], ${recipients}::text[]) as t(id, email)`;
    const segment = await api(s, 'segment', '/segments', {
      name: `chaos ${domain}`,
      filter: { field: 'email', op: 'ends_with', value: `@${domain}` },
    });
    id = (
      await api(s, 'broadcast', '/broadcasts', {
        name: `chaos ${domain}`,
        from: `Chaos <news@${s.org.domain}>`,
        subject: `chaos broadcast ${k}`,
        html: `<p>broadcast ${k}</p>`,
        segment_id: segment.id,
      })
    ).id;
  } catch (err) {
    const what = err instanceof Refused ? err.message : ((err as { code?: string }).code ?? 'error');
    return { recipients, outcome: null, error: `broadcast not sent (${what})` };
  }
  try {
    await api(s, 'send', `/broadcasts/${id}/send`, {});
    return { recipients, outcome: 'accepted' };
  } catch (err) {
    if (err instanceof Refused) return { recipients, outcome: 'refused', error: `broadcast ${err.message}` };
    const e = err as { name?: string; cause?: { code?: string } };
    const code = e.cause?.code ?? e.name ?? '';
    return {
      recipients,
      outcome: code === 'ECONNREFUSED' ? 'not-connected' : 'unconfirmed',
      error: `broadcast send: ${code}`,
    };
  }
}
