// Request schema of POST /events (DESIGN §5 "Events and automations").
export interface PostEventBody {
  name: string;
  email?: string;
  contact_id?: string;
  properties?: Record<string, unknown>;
}

export const postEventSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 200, pattern: '^\\S(.*\\S)?$', format: 'label' },
    email: { type: 'string', maxLength: 320, format: 'email' },
    contact_id: { type: 'string', minLength: 1, maxLength: 64 },
    // Free-form: an automation's template may read nested values.
    properties: { type: 'object', maxProperties: 100 },
  },
} as const;
