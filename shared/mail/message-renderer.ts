// The bytes of one stored message as the delivery worker hands them over: composed (API sends)
// or taken as written (relay sends), DKIM-signed with the domain's key. Shared by the live path,
// the test-mode path that stores them (the development inbox) and the raw-message reader of the
// API and the console, so that all three produce the same message from the same code.
import { listAttachments, type DeliveryEmail, type StoredAttachment } from '../db/delivery.js';
import type { Db } from '../db/pool.js';
import type { Config } from '../config.js';
import { secretBox } from '../secrets.js';
import { composeMessage, isPersonal, prepareRawMessage, signDkim, type Tracker } from './render.js';

export interface MessageRenderer {
  /** True when each recipient gets bytes of its own (tracking links, one-click unsubscribe). */
  readonly personal: boolean;
  /** The signed bytes for one recipient (the shared copy when not personal). */
  forRecipient(recipientId: string): Promise<Buffer>;
}

export interface RendererDeps {
  sql: Db;
  config: Pick<Config, 'baseUrl' | 'secretKey' | 'secretKeyPrevious'>;
}

/**
 * A renderer of one message. Signed with the domain's DKIM key; a domain without one (only rows
 * made outside the API lack it: live sends of such a domain fail before rendering) is left
 * unsigned.
 */
export function messageRenderer(deps: RendererDeps, tracker: Tracker, email: DeliveryEmail): MessageRenderer {
  const opens = email.domain_track_opens ?? email.org_track_opens;
  const clicks = email.domain_track_clicks ?? email.org_track_clicks;
  const common = {
    fromDomain: email.domain_name,
    baseUrl: deps.config.baseUrl,
    secret: deps.config.secretKey,
    opens,
    clicks,
    unsubscribe: email.topic_id !== null || email.source === 'broadcast',
  };
  const privateKey = email.dkim_private_key && secretBox(deps.config).open(email.dkim_private_key, 'dkim-key');
  const sign = (raw: Buffer) =>
    privateKey ? signDkim(raw, { domain: email.domain_name, selector: email.dkim_selector, privateKey }) : raw;
  // Relay messages are delivered as their client wrote them: no rewriting, so one copy for all.
  const personal = email.raw_mime === null && isPersonal(common, email.html);
  let attachments: Promise<StoredAttachment[]> | null = null;
  let shared: Promise<Buffer> | null = null;
  const render = async (recipientId: string | null): Promise<Buffer> => {
    if (email.raw_mime !== null)
      return await sign(prepareRawMessage(email.raw_mime, email.message_id, email.created_at));
    attachments ??= email.has_attachments ? listAttachments(deps.sql, email.id) : Promise.resolve([]);
    const p = recipientId && personal ? { ...common, recipientId, tracker } : null;
    return await sign(await composeMessage(email, await attachments, p));
  };
  return {
    personal,
    forRecipient(recipientId: string): Promise<Buffer> {
      if (personal) return render(recipientId);
      shared ??= render(null);
      return shared;
    },
  };
}
