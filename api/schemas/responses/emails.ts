// Response schemas of the email routes (api/routes/emails.ts, emails-batch.ts).
import { EMAIL_STATUSES } from '../emails.js';
import {
  arrayOf,
  constant,
  int,
  object,
  oneOf,
  ref,
  str,
  strings,
  strOrNull,
  time,
  timeOrNull,
  type Schema,
} from './build.js';

const RECIPIENT_STATUSES = [
  'scheduled',
  'queued',
  'sent',
  'delivery_delayed',
  'delivered',
  'bounced',
  'rejected',
  'failed',
  'canceled',
] as const;

const emailFields: Record<string, Schema> = {
  object: constant('email'),
  id: { type: 'string', description: 'Email id (`em_…`).' },
  from: str,
  to: strings,
  cc: strings,
  bcc: strings,
  reply_to: strings,
  subject: str,
  tags: arrayOf(object({ name: str, value: str })),
  kind: strOrNull,
  stream: {
    type: 'string',
    enum: ['transactional', 'broadcast'],
    description: 'The delivery stream (transactional mail is delivered first).',
  },
  mode: oneOf(['live', 'test']),
  status: oneOf(EMAIL_STATUSES),
  created_at: time,
  scheduled_at: timeOrNull,
  last_event: {
    type: 'string',
    description: 'The last event without its `email.` prefix (`delivered`), or the status before any event.',
  },
};

export const emailResponses: Record<string, Schema> = {
  Email: object(emailFields, [], 'An email as lists show it.'),
  EmailDetail: object(
    {
      ...emailFields,
      raw_url: {
        type: 'string',
        format: 'uri',
        description: 'GET it with the same key: the message’s MIME (`GET /emails/{id}/raw`).',
      },
      html: strOrNull,
      text: strOrNull,
      template: {
        oneOf: [object({ id: str, slug: strOrNull, version: { type: ['integer', 'null'] } }), { type: 'null' }],
      },
      content: {
        const: 'purged',
        description:
          'Present when the organization’s retention (`retention.content_days`) removed the bodies, raw MIME and attachments.',
      },
      recipients: arrayOf(ref('EmailRecipient')),
    },
    ['content'],
    'An email with its content and the state of each recipient.',
  ),
  EmailRecipient: object({
    email: str,
    field: oneOf(['to', 'cc', 'bcc']),
    status: oneOf(RECIPIENT_STATUSES),
    last_event_at: timeOrNull,
    wait_reason: { type: ['string', 'null'], description: 'Why a recipient still waits (retry time and reply).' },
    last_response: strOrNull,
    tls: {
      oneOf: [
        object({
          version: {
            ...strOrNull,
            description: 'The session’s TLS protocol (`TLSv1.3`); null: plaintext or no session.',
          },
          cipher: strOrNull,
          policy: oneOf(['mta-sts', 'dane', 'none']),
          mode: { ...str, description: '`enforce` or `testing` (the policy’s), else `verified` or `opportunistic`.' },
        }),
        { type: 'null' },
      ],
      description: 'The TLS of the last delivery attempt; null before the first.',
    },
  }),
  EmailEvent: object(
    {
      object: constant('event'),
      id: str,
      type: str,
      recipient: {
        type: ['string', 'null'],
        description: 'The address the event is about; null for a reply (`email.received`).',
      },
      bounce_type: oneOf(['hard', 'soft', 'undetermined']),
      detail: str,
      url: str,
      created_at: time,
    },
    ['bounce_type', 'detail', 'url'],
  ),
  EmailCreated: object({ id: { type: 'string', description: 'The new email id (`em_…`).' } }),
  EmailBatchCreated: object(
    {
      data: arrayOf(object({ id: str })),
      errors: arrayOf(object({ index: int, message: str })),
    },
    ['errors'],
    '`errors` only with `x-batch-validation: permissive`: the items refused, by index.',
  ),
  EmailRef: object({ object: constant('email'), id: str }),
};
