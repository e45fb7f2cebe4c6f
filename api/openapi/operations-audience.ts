// Operation docs of the contact, topic, segment, event, broadcast and automation routes.
import type { OperationDocs } from './types.js';

const contactExample = { email: 'ann@example.com', first_name: 'Ann', properties: { plan: 'pro' } };

export const audienceOperations: OperationDocs = {
  'POST /contacts': {
    summary: 'Create or update a contact',
    description:
      'Upsert by address: 201 when created, 200 when it existed. A domain-restricted key may call it (list signup); its upserts start no automation and cannot carry `topics`.',
    response: 'Contact',
    status: [201, 200],
    errors: ['forbidden_domain'],
    example: contactExample,
  },
  'GET /contacts': { summary: 'List contacts', response: 'ContactList' },
  'GET /contacts/:id': { summary: 'Get a contact', response: 'Contact' },
  'PATCH /contacts/:id': {
    summary: 'Change a contact',
    response: 'Contact',
    errors: ['forbidden_domain'],
    example: { last_name: 'Smith', unsubscribed: false },
  },
  'DELETE /contacts/:id': { summary: 'Delete a contact', response: 'ContactDeleted' },
  'POST /contacts/:id/subscriptions': {
    summary: 'Set a contact’s subscriptions',
    response: 'Subscriptions',
    example: { unsubscribed: false, topics: [{ id: 'top_01J0000000000000000000000', subscription: 'opt_out' }] },
  },
  'GET /contacts/:id/subscriptions': { summary: 'Get a contact’s subscriptions', response: 'Subscriptions' },
  'PATCH /contacts/:id/topics': {
    summary: 'Set a contact’s topics (Resend SDK)',
    response: 'ContactRef',
    example: [{ id: 'top_01J0000000000000000000000', subscription: 'opt_in' }],
  },
  'GET /contacts/:id/topics': { summary: 'List a contact’s topics (Resend SDK)', response: 'ContactTopics' },
  'POST /contacts/:id/segments/:segment_id': {
    summary: 'Add a contact to a segment',
    description:
      'The contact is in the segment from now on, whatever its filter says (a segment made without a filter is static: it holds the contacts added to it). Resend’s `contacts.segments.add`.',
    response: 'SegmentMembership',
    status: [201],
  },
  'DELETE /contacts/:id/segments/:segment_id': {
    summary: 'Take a contact out of a segment',
    description: 'The contact stays out of the segment, whatever its filter says. Resend’s `contacts.segments.remove`.',
    response: 'SegmentMembershipDeleted',
  },
  'GET /contacts/:id/segments': {
    summary: 'List the segments a contact is in',
    description:
      'Pages through the organization’s segments (`limit`, `after`) and answers those holding the contact now, by filter or membership: a page may hold fewer than `limit` while `has_more` is true.',
    response: 'SegmentList',
  },
  'POST /audiences/:audience_id/contacts': {
    summary: 'Create or update a contact (Resend SDK)',
    description: 'Same as `POST /contacts`; the audience id is ignored.',
    response: 'Contact',
    status: [201, 200],
    errors: ['forbidden_domain'],
    example: contactExample,
  },
  'GET /audiences/:audience_id/contacts': { summary: 'List contacts (Resend SDK)', response: 'ContactList' },
  'GET /audiences/:audience_id/contacts/:id': { summary: 'Get a contact (Resend SDK)', response: 'Contact' },
  'PATCH /audiences/:audience_id/contacts/:id': {
    summary: 'Change a contact (Resend SDK)',
    response: 'Contact',
    errors: ['forbidden_domain'],
    example: { first_name: 'Ann' },
  },
  'DELETE /audiences/:audience_id/contacts/:id': {
    summary: 'Delete a contact (Resend SDK)',
    response: 'ContactDeleted',
  },

  'POST /topics': {
    summary: 'Create a topic',
    response: 'Topic',
    status: [201],
    errors: ['conflict'],
    example: { name: 'Product news', default_subscription: 'opt_in' },
  },
  'GET /topics': { summary: 'List topics', response: 'TopicList' },
  'GET /topics/:id': { summary: 'Get a topic', response: 'Topic' },
  'PATCH /topics/:id': {
    summary: 'Change a topic',
    response: 'Topic',
    errors: ['conflict'],
    example: { description: 'Monthly' },
  },
  'DELETE /topics/:id': { summary: 'Delete a topic', response: 'TopicDeleted' },

  'POST /segments': {
    summary: 'Create a segment',
    response: 'Segment',
    status: [201],
    example: {
      name: 'Pro plan',
      filter: {
        all: [
          { field: 'properties.plan', op: 'eq', value: 'pro' },
          { topic: 'top_01J0000000000000000000000', subscribed: true },
        ],
      },
    },
  },
  'GET /segments': { summary: 'List segments', response: 'SegmentList' },
  'GET /segments/:id': { summary: 'Get a segment', response: 'Segment' },
  'PATCH /segments/:id': { summary: 'Change a segment', response: 'Segment', example: { name: 'Pro customers' } },
  'DELETE /segments/:id': { summary: 'Delete a segment', response: 'SegmentDeleted' },
  'GET /segments/:id/contacts': { summary: 'List a segment’s contacts', response: 'ContactList' },

  'POST /events': {
    summary: 'Record a custom event',
    description:
      'Starts the automations triggered by this event name for the contact (created when the address is new). Resend’s names are accepted too: `event` for `name`, `payload` for `properties` (one of each).',
    response: 'EventAccepted',
    status: [202],
    example: { name: 'signed_up', email: 'ann@example.com' },
  },

  'POST /broadcasts': {
    summary: 'Create a broadcast',
    description: '`send: true` sends it at once (or at `scheduled_at`), refused while sending is paused.',
    response: 'Broadcast',
    status: [201],
    errors: ['forbidden_domain', 'sending_paused', 'demo_domain', 'outcome_unknown'],
    example: {
      name: 'March news',
      segment_id: 'seg_01J0000000000000000000000',
      from: 'Acme <news@acme.com>',
      subject: 'What is new in March',
      html: '<p>Hi {{{FIRST_NAME|there}}}</p>',
    },
  },
  'GET /broadcasts': { summary: 'List broadcasts', response: 'BroadcastList' },
  'GET /broadcasts/:id': { summary: 'Get a broadcast', response: 'Broadcast' },
  'PATCH /broadcasts/:id': {
    summary: 'Change a draft broadcast',
    response: 'Broadcast',
    errors: ['forbidden_domain', 'invalid_state'],
    example: { subject: 'What is new in April' },
  },
  'DELETE /broadcasts/:id': {
    summary: 'Delete a draft broadcast',
    response: 'BroadcastDeleted',
    errors: ['invalid_state'],
  },
  'POST /broadcasts/:id/send': {
    summary: 'Send a draft broadcast',
    response: 'BroadcastSending',
    errors: ['invalid_state', 'outcome_unknown'],
    example: { scheduled_at: '2030-03-01T09:00:00Z' },
  },
  'POST /broadcasts/:id/cancel': {
    summary: 'Cancel a scheduled or sending broadcast',
    response: 'Broadcast',
    errors: ['invalid_state'],
  },

  'POST /automations': {
    summary: 'Create an automation',
    response: 'Automation',
    status: [201],
    example: {
      name: 'Welcome series',
      trigger: { event: 'signed_up' },
      steps: [
        { send: { template: 'welcome', from: 'Acme <hello@acme.com>' } },
        { wait_for_event: { event: 'first_project', timeout: '3d' }, next: 'done', on_timeout: 'nudge' },
        {
          id: 'nudge',
          condition: { field: 'properties.plan', op: 'eq', value: 'team' },
          then: 'sales',
          else: 'tips',
        },
        { id: 'sales', add_to_segment: 'seg_01JQ7Z8X9Y0A1B2C3D4E5F6G7H', next: 'end' },
        { id: 'tips', send: { template: 'tips', from: 'Acme <hello@acme.com>' }, next: 'end' },
        { id: 'done', update_contact: { properties: { onboarded: true } } },
      ],
    },
  },
  'GET /automations': { summary: 'List automations', response: 'AutomationList' },
  'GET /automations/:id': { summary: 'Get an automation', response: 'Automation' },
  'PATCH /automations/:id': {
    summary: 'Change an automation',
    response: 'Automation',
    example: { status: 'disabled' },
  },
  'DELETE /automations/:id': { summary: 'Delete an automation', response: 'AutomationDeleted' },
  'GET /automations/:id/runs': {
    summary: 'List an automation’s runs (filter by status)',
    response: 'AutomationRunList',
  },
  'GET /automations/:id/runs/:run_id': {
    summary: 'Inspect a run: its steps, and each step it went through with times and outcome',
    response: 'AutomationRunDetail',
  },
};
