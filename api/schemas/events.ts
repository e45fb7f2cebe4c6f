// Request schema of POST /events (DESIGN §5 "Events and automations").
export interface PostEventBody {
  name?: string;
  /** Resend's name for `name` (`POST /events/send`). */
  event?: string;
  email?: string;
  contact_id?: string;
  properties?: Record<string, unknown>;
  /** Resend's name for `properties`. */
  payload?: Record<string, unknown>;
}

const eventName = { type: 'string', minLength: 1, maxLength: 200, pattern: '^\\S(.*\\S)?$', format: 'label' } as const;
const eventProperties = { type: 'object', maxProperties: 100 } as const;

// `name` or Resend's `event`, `properties` or Resend's `payload`: the handler takes one of each.
export const postEventSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    name: eventName,
    event: eventName,
    email: { type: 'string', maxLength: 320, format: 'email' },
    contact_id: { type: 'string', minLength: 1, maxLength: 64 },
    // Free-form: an automation's template may read nested values.
    properties: eventProperties,
    payload: eventProperties,
  },
} as const;
