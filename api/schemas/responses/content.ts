// Response schemas of the template, broadcast and metrics routes.
import { FACET_FIELDS, SERIES_FIELDS } from '../../../shared/metrics/counters.js';
import {
  arrayOf,
  constant,
  deleted,
  int,
  intOrNull,
  object,
  oneOf,
  str,
  strOrNull,
  time,
  timeOrNull,
  type Schema,
} from './build.js';

const templateFields: Record<string, Schema> = {
  object: constant('template'),
  id: { type: 'string', description: 'Template id (`tpl_…`).' },
  slug: str,
  name: str,
  subject: strOrNull,
  html: strOrNull,
  text: strOrNull,
  from: strOrNull,
  variables: arrayOf(
    object({
      key: str,
      type: oneOf(['string', 'number']),
      fallback_value: { type: ['string', 'number', 'null'] },
    }),
  ),
  published_version: { type: ['integer', 'null'], description: 'null: never published; sends need a version.' },
  created_at: time,
  updated_at: time,
};

const counters = (fields: readonly (readonly [string, string])[]): Record<string, Schema> =>
  Object.fromEntries(fields.map(([name]) => [name, { type: 'integer', minimum: 0 }]));

const pct: Schema = { type: 'number', minimum: 0, maximum: 100 };

export const contentResponses: Record<string, Schema> = {
  TemplateSummary: object(templateFields, [], 'A template as lists show it (its draft and published version).'),
  Template: object({
    ...templateFields,
    versions: arrayOf(object({ version: int, created_at: time })),
  }),
  TemplateDeleted: deleted('template', { slug: str }),

  Broadcast: object({
    object: constant('broadcast'),
    id: { type: 'string', description: 'Broadcast id (`bc_…`).' },
    name: strOrNull,
    from: strOrNull,
    subject: strOrNull,
    reply_to: { type: ['array', 'null'], items: str },
    preview_text: strOrNull,
    html: strOrNull,
    text: strOrNull,
    template: { oneOf: [object({ id: str, version: intOrNull }), { type: 'null' }] },
    segment_id: strOrNull,
    audience_id: { type: ['string', 'null'], description: 'Same as `segment_id` (the Resend SDK’s name).' },
    topic_id: strOrNull,
    kind: strOrNull,
    status: oneOf(['draft', 'scheduled', 'sending', 'sent', 'canceled']),
    scheduled_at: timeOrNull,
    sent_at: timeOrNull,
    canceled_at: timeOrNull,
    counts: object({
      recipients: int,
      sent: int,
      skipped_unsubscribed: int,
      skipped_suppressed: int,
      skipped_topic: int,
      failed: int,
      canceled: int,
    }),
    created_at: time,
  }),
  BroadcastDeleted: deleted('broadcast'),
  BroadcastSending: object({
    object: constant('broadcast'),
    id: str,
    status: oneOf(['scheduled', 'sending']),
    scheduled_at: timeOrNull,
  }),

  Metrics: object(
    {
      object: constant('metrics'),
      days: { type: 'integer', minimum: 1, maximum: 90 },
      domain: { type: ['string', 'null'], description: 'null: the organization total.' },
      series: arrayOf(object({ day: { type: 'string', format: 'date' }, ...counters(SERIES_FIELDS) })),
      totals: object(counters(SERIES_FIELDS)),
      rates: object({
        delivery: pct,
        bounce: pct,
        hardBounce: pct,
        softBounce: pct,
        complaint: pct,
        open: pct,
        click: pct,
        openMachine: pct,
        clickMachine: pct,
      }),
      facet: oneOf(['provider', 'key', 'template', 'kind', 'stream']),
      by: arrayOf(object({ key: str, label: str, ...counters(FACET_FIELDS) })),
    },
    ['facet', 'by'],
    'Daily counters of a window that ends today (UTC); `facet` and `by` only when a facet was asked for.',
  ),
};
