// Custom events (DESIGN §5 "Events and automations"): POST /events (and Resend's path for it,
// POST /events/send, with its names `event` and `payload`) stores the event for the automation
// engine and answers 202. The contact is named by id or by address; an unknown
// address becomes a new contact. Closed to domain-restricted keys (SPEC "Domain restriction" 5).
import { ensureContact, findContact } from '../../shared/db/contacts.js';
import { insertContactEvent } from '../../shared/db/contact-events.js';
import { validationError } from '../../shared/errors.js';
import { isId } from '../../shared/ids.js';
import { type PostEventBody } from '../schemas/events.js';
import type { Handlers } from '../types.js';
import { routeBody } from '../route-schemas.js';

/** A field by Tern's name or Resend's (`POST /events/send`), not both. */
function oneOf<K extends 'name' | 'properties', R extends 'event' | 'payload'>(
  body: PostEventBody,
  tern: K,
  resend: R,
  required: boolean,
): PostEventBody[K] | PostEventBody[R] {
  if (body[tern] !== undefined && body[resend] !== undefined) {
    throw validationError(`body.${resend} is Resend's name for body.${tern}: give one of them`);
  }
  const value = body[tern] ?? body[resend];
  if (required && value === undefined) throw validationError(`body.${tern} is required (or body.${resend})`);
  return value;
}

export const eventHandlers: Handlers = {
  'POST /events': async (ctx) => {
    const auth = ctx.state.auth;
    const body = routeBody<PostEventBody>(ctx);
    const name = oneOf(body, 'name', 'event', true)!;
    const properties = oneOf(body, 'properties', 'payload', false) ?? {};
    if ((body.email === undefined) === (body.contact_id === undefined)) {
      throw validationError('body.email or body.contact_id is required (exactly one of them)');
    }
    const event = await ctx.deps.sql.begin(async (tx) => {
      let contactId: string;
      if (body.contact_id !== undefined) {
        const contact = isId(body.contact_id, 'ct') ? await findContact(tx, auth.org.id, body.contact_id) : null;
        if (!contact)
          throw validationError(`body.contact_id: "${body.contact_id}" is not a contact of this organization`);
        contactId = contact.id;
      } else {
        contactId = (await ensureContact(tx, auth.org.id, body.email!, auth.key.id)).contact.id;
      }
      return await insertContactEvent(tx, {
        orgId: auth.org.id,
        contactId,
        name,
        properties,
        keyId: auth.key.id,
        mode: auth.key.mode,
      });
    });
    ctx.status = 202;
    ctx.body = { object: 'event', id: event.id, name: event.name, event: event.name, contact_id: event.contact_id };
  },
};
