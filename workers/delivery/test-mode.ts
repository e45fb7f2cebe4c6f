// The test-mode path of a delivery (DESIGN §6, §12): every step of a live send but the network.
// The message is composed and DKIM-signed by the live path's renderer and its bytes stored (the
// development inbox: GET /emails/{id}/raw, the console), then each recipient's outcome is
// simulated from its local part.
import type { DeliveryEmail } from '../../shared/db/delivery.js';
import { insertRawMessages, type NewRawMessage } from '../../shared/db/raw-messages.js';
import { messageRenderer } from '../../shared/mail/message-renderer.js';
import { providerOf } from '../../shared/mail/providers.js';
import type { Leased, LiveContext, Recorder } from './send.js';
import { simulate, type Verdict } from './verdict.js';

/** Composes and stores the copies; returns why rendering failed for a recipient, by id. */
async function storeCopies(ctx: LiveContext, email: DeliveryEmail, leased: Leased[]): Promise<Map<string, string>> {
  const renderer = messageRenderer(ctx.deps, ctx.tracker, email);
  const failures = new Map<string, string>();
  const rows: NewRawMessage[] = [];
  const targets = renderer.personal ? leased : leased.slice(0, 1);
  for (const r of targets) {
    try {
      const raw = await renderer.forRecipient(r.id);
      rows.push({ emailId: email.id, recipientId: renderer.personal ? r.id : null, raw });
    } catch (err) {
      ctx.deps.logger.error({ event: 'DELIVERY_RENDER_FAILED', emailId: email.id, err }, 'render failed');
      const why = `render error: ${(err as Error).message}`.slice(0, 500);
      for (const x of renderer.personal ? [r] : leased) failures.set(x.id, why);
    }
  }
  await insertRawMessages(ctx.deps.sql, rows);
  return failures;
}

export async function deliverTest(ctx: LiveContext, email: DeliveryEmail, leased: Leased[], record: Recorder) {
  const failures = await storeCopies(ctx, email, leased);
  for (const r of leased) {
    const provider = r.provider ?? providerOf(r.domain, []).id;
    const why = failures.get(r.id);
    const verdict: Verdict = why ? { kind: 'failed', response: why, detail: why } : simulate(r.email, r.attempts);
    await record({ id: r.id, email: r.email, attempts: r.attempts, provider }, verdict);
  }
}
