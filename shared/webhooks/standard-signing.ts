// The Standard Webhooks signature (standardwebhooks.com; what the Resend SDK's `webhooks.verify`
// and Svix check), sent beside the spec's `tern-signature` and made with the same secret:
// `webhook-signature: v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">`,
// one `v1,` entry per secret, separated by spaces. The HMAC key is what Standard Webhooks takes
// from a `whsec_` secret: the base64 after the prefix, decoded (Tern's own scheme keys with the
// whole string instead, shared/webhooks/signing.ts).
import { createHmac } from 'node:crypto';

const PREFIX = 'whsec_';

function key(secret: string): Buffer {
  return Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');
}

/** The three Standard Webhooks headers of one delivery attempt. */
export function standardWebhookHeaders(
  id: string,
  timestamp: number,
  body: string | Buffer,
  secrets: string[],
): { 'webhook-id': string; 'webhook-timestamp': string; 'webhook-signature': string } {
  const signatures = secrets.map((secret) => {
    const mac = createHmac('sha256', key(secret))
      .update(`${id}.${timestamp}.`)
      .update(typeof body === 'string' ? Buffer.from(body, 'utf8') : body)
      .digest('base64');
    return `v1,${mac}`;
  });
  return { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signatures.join(' ') };
}
