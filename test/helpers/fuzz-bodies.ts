// Well-formed-looking bodies of the fuzzed routes (test/int/api-fuzz.int.test.ts): every field
// of the route's schema, each present or not, mostly of the right shape with values at and past
// its limits, sometimes of any type, plus unknown fields. `fuzzBodies` (fuzz-json.ts) mixes them
// with any JSON, deep nesting and text that is not JSON.
import fc from 'fast-check';
import { EVENT_TYPES } from '../../shared/events.js';
import { edgeNumber, longString, messyString, mostly, wrongType } from './fuzz-json.js';

export interface FuzzTargets {
  domain: string;
  template: string;
  topic: string;
  contact: string;
}

const text = (limits: number[]) =>
  fc.oneof({ weight: 3, arbitrary: messyString }, { weight: 1, arbitrary: longString(limits) });
const address = (domain: string) =>
  fc.oneof(
    fc.constantFrom('ann@example.com', 'Ann <ann@example.com>', '"A, B" <ab@example.com>', `x@${domain}`),
    fc.emailAddress(),
    messyString,
    messyString.map((s) => `${s}@example.com`),
    longString([320]).map((s) => `${s}@example.com`),
  );
const addressList = (domain: string) =>
  mostly(
    fc.oneof(
      address(domain),
      fc.array(address(domain), { maxLength: 4 }),
      fc.array(fc.constant('a@example.com'), { minLength: 49, maxLength: 52 }),
    ),
  );
const unknownFields = fc.dictionary(messyString, wrongType, { maxKeys: 2 });

type Model = Record<string, fc.Arbitrary<unknown>>;

/**
 * Bodies of a route: a valid `base` with one or two of its fields drawn from `model` (so that
 * many are accepted), any subset of the model's fields, and either with unknown fields added.
 */
function around(base: Record<string, unknown>, model: Model): fc.Arbitrary<Record<string, unknown>> {
  const all = fc.record(model, { requiredKeys: [] });
  const keys = Object.keys(model);
  const near = fc
    .tuple(all, fc.subarray(keys, { maxLength: Math.min(2, keys.length) }))
    .map(([r, pick]) => ({ ...base, ...Object.fromEntries(pick.filter((k) => k in r).map((k) => [k, r[k]])) }));
  const shaped = fc.oneof({ weight: 2, arbitrary: near }, { weight: 1, arbitrary: all });
  return fc.oneof(
    { weight: 5, arbitrary: shaped },
    { weight: 1, arbitrary: fc.tuple(shaped, unknownFields).map(([s, u]) => ({ ...u, ...s })) },
  );
}

const when = fc.oneof(
  fc
    .date({ min: new Date(Date.now() - 86_400_000), max: new Date(Date.now() + 40 * 86_400_000), noInvalidDate: true })
    .map((d) => d.toISOString()),
  fc.constantFrom(
    'in 10 min',
    'in 2 days',
    'in 999999 days',
    'tomorrow',
    '2030-02-30T00:00:00Z',
    '+275760-09-13T00:00:00Z',
    '',
  ),
  messyString,
);
const tagText = fc.oneof(fc.stringMatching(/^[A-Za-z0-9_-]{1,20}$/), messyString, longString([256]));
const headerName = fc.oneof(
  fc.constantFrom('X-Fuzz', 'Reply-To', 'From', 'Bcc', 'Message-ID', 'Content-Type', 'List-Unsubscribe'),
  fc.stringMatching(/^[!-9;-~]{1,10}$/),
  messyString,
);

function emailFields(t: FuzzTargets) {
  return {
    from: mostly(
      fc.oneof(
        fc.constantFrom(`Fuzz <hello@${t.domain}>`, `hello@${t.domain}`, 'hello@elsewhere.test'),
        address(t.domain),
      ),
    ),
    to: addressList(t.domain),
    cc: addressList(t.domain),
    bcc: addressList(t.domain),
    reply_to: addressList(t.domain),
    subject: mostly(text([998])),
    html: mostly(
      fc.oneof(
        text([20_000]),
        fc.constantFrom('<a href="https://example.com/">x</a>', '<img src=x onerror=1>', '<p>'.repeat(500)),
      ),
    ),
    text: mostly(text([20_000])),
    headers: mostly(fc.dictionary(headerName, mostly(text([2000])), { maxKeys: 4 })),
    tags: mostly(
      fc.array(mostly(fc.record({ name: tagText, value: tagText }, { requiredKeys: [] })), { maxLength: 3 }),
    ),
    template: mostly(
      fc.record(
        {
          id: mostly(fc.oneof(fc.constant(t.template), messyString)),
          version: mostly(fc.oneof(fc.integer({ min: -1, max: 3 }), edgeNumber)),
          variables: mostly(
            fc.dictionary(messyString, mostly(fc.oneof(messyString, edgeNumber, fc.boolean())), { maxKeys: 3 }),
          ),
        },
        { requiredKeys: [] },
      ),
    ),
    kind: mostly(text([64])),
    topic_id: mostly(fc.oneof(fc.constant(t.topic), messyString)),
  };
}

const base64 = fc.oneof(
  fc.base64String({ maxLength: 40 }),
  fc.constantFrom('====', 'a', 'ab=c', '!!!!', 'SGVsbG8'),
  messyString,
);
const attachment = fc.record(
  {
    filename: mostly(fc.oneof(fc.constantFrom('a.pdf', '../etc/passwd', 'a\r\nb.txt', 'é.txt'), messyString)),
    content: mostly(base64),
    content_type: mostly(
      fc.oneof(fc.constantFrom('text/plain', 'application/pdf', 'text/html; charset=utf-8', 'x'), messyString),
    ),
    content_id: mostly(messyString),
  },
  { requiredKeys: [] },
);

const validEmail = (t: FuzzTargets) => ({
  from: `Fuzz <hello@${t.domain}>`,
  to: 'ann@example.com',
  subject: 'Hi',
  text: 'Hello',
});

export function sendEmailBody(t: FuzzTargets) {
  return around(validEmail(t), {
    ...emailFields(t),
    attachments: mostly(fc.array(mostly(attachment), { maxLength: 2 })),
    scheduled_at: mostly(when),
  });
}

export function batchBody(t: FuzzTargets) {
  const item = around(validEmail(t), emailFields(t));
  return fc.oneof(
    { weight: 6, arbitrary: fc.array(item, { minLength: 0, maxLength: 4 }) },
    {
      weight: 1,
      arbitrary: fc.array(fc.constant({ from: `hello@${t.domain}`, to: 'a@example.com', text: 'x' }), {
        minLength: 99,
        maxLength: 102,
      }),
    },
    { weight: 1, arbitrary: item },
  );
}

export const updateEmailBody = around({ scheduled_at: 'in 2 days' }, { scheduled_at: mostly(when) });

function contactFields(t: FuzzTargets) {
  return {
    first_name: mostly(fc.oneof(text([256]), fc.constant(null))),
    last_name: mostly(fc.oneof(text([256]), fc.constant(null))),
    properties: mostly(
      fc.dictionary(
        fc.oneof(fc.stringMatching(/^[a-z][a-z0-9_]{0,20}$/), messyString),
        mostly(fc.oneof(text([2000]), edgeNumber, fc.boolean(), fc.constant(null))),
        { maxKeys: 4 },
      ),
    ),
    unsubscribed: mostly(fc.boolean()),
    audience_id: mostly(text([128])),
    topics: mostly(
      fc.array(
        mostly(
          fc.record(
            {
              id: mostly(fc.oneof(fc.constant(t.topic), messyString)),
              subscription: mostly(fc.constantFrom('opt_in', 'opt_out', 'maybe')),
            },
            { requiredKeys: [] },
          ),
        ),
        { maxLength: 3 },
      ),
    ),
  };
}

export function upsertContactBody(t: FuzzTargets) {
  const { topics, ...patch } = contactFields(t);
  return around({ email: 'reader@example.com' }, { email: mostly(address(t.domain)), ...patch, topics });
}

export function patchContactBody(t: FuzzTargets) {
  const { topics: _topics, ...patch } = contactFields(t);
  return around({}, patch);
}

const webhookFields = {
  url: mostly(
    fc.oneof(
      fc.constantFrom(
        'https://hooks.example.com/tern',
        'http://hooks.example.com/',
        'https://127.0.0.1/',
        'https://[::1]/',
        'https://user:pw@example.com/',
        'javascript:alert(1)',
        'https://exa mple.com/',
      ),
      fc.webUrl({ withQueryParameters: true, withFragments: true }),
      messyString.map((s) => `https://${s}/`),
      longString([2048 - 20]).map((s) => `https://example.com/${s}`),
    ),
  ),
  events: mostly(fc.array(mostly(fc.oneof(fc.constantFrom(...EVENT_TYPES), messyString)), { maxLength: 13 })),
  description: mostly(fc.oneof(text([500]), fc.constant(null))),
};

export const createWebhookBody = around({ url: 'https://hooks.example.com/fuzz' }, webhookFields);

export const updateWebhookBody = around(
  {},
  {
    ...webhookFields,
    status: mostly(fc.constantFrom('enabled', 'disabled', 'paused')),
  },
);

export function postEventBody(t: FuzzTargets) {
  return around(
    { name: 'signed_up', email: 'reader@example.com' },
    {
      name: mostly(fc.oneof(fc.constantFrom('signed_up', ' padded ', 'a'), text([200]))),
      email: mostly(address(t.domain)),
      contact_id: mostly(fc.oneof(fc.constant(t.contact), messyString)),
      properties: mostly(fc.dictionary(messyString, wrongType, { maxKeys: 5 })),
    },
  );
}
