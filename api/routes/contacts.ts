// Contacts (DESIGN §5; SPEC "Routes named in the permission rules", "Domain restriction" 4–5).
// Contacts belong to the organization, not to a domain: a domain-restricted key may upsert them
// (list signup; such an upsert starts no automation) and read them, but not change their
// subscriptions nor delete them. Resend's audience-scoped paths are aliases of the same handlers.
import { isRestricted } from '../../shared/auth.js';
import { deleteContact, listContacts, updateContact, upsertContact } from '../../shared/db/contacts.js';
import { setSubscriptions } from '../../shared/db/topics.js';
import { notFound } from '../../shared/errors.js';
import { type ContactPatchBody, type ListContactsQuery, type UpsertContactBody } from '../schemas/contacts.js';
import type { Handler, Handlers } from '../types.js';
import { listEnvelope } from '../validate.js';
import { checkedChoices, contactOr404, refuseSubscriptionChange, renderContact } from './contacts-render.js';
import { routeBody, routeQuery } from '../route-schemas.js';

const upsert: Handler = async (ctx) => {
  const auth = ctx.state.auth;
  const body = routeBody<UpsertContactBody>(ctx);
  refuseSubscriptionChange(auth, body);
  const startsAutomations = !isRestricted(auth);
  const result = await ctx.deps.sql.begin(async (tx) => {
    const choices = body.topics ? await checkedChoices(tx, auth.org.id, body.topics, 'body.topics') : [];
    const r = await upsertContact(tx, {
      orgId: auth.org.id,
      email: body.email,
      firstName: body.first_name,
      lastName: body.last_name,
      properties: body.properties,
      unsubscribed: body.unsubscribed,
      keyId: auth.key.id,
      startsAutomations,
    });
    await setSubscriptions(tx, r.contact.id, choices);
    return r;
  });
  if (!result.startsAutomations) {
    ctx.state.log.info(
      { event: 'CONTACT_SIGNUP_RESTRICTED', contactId: result.contact.id, keyId: auth.key.id, created: result.created },
      'contact upserted by a domain-restricted key; no automation starts',
    );
  }
  ctx.status = result.created ? 201 : 200;
  ctx.body = renderContact(result.contact);
};

const list: Handler = async (ctx) => {
  const q = routeQuery<ListContactsQuery>(ctx);
  const rows = await listContacts(ctx.deps.sql, ctx.state.auth.org.id, q, q);
  ctx.body = listEnvelope(rows, q.limit, renderContact);
};

const get: Handler = async (ctx) => {
  ctx.body = renderContact(await contactOr404(ctx.deps.sql, ctx.state.auth, ctx.params.id!));
};

const patch: Handler = async (ctx) => {
  const auth = ctx.state.auth;
  const body = routeBody<ContactPatchBody>(ctx);
  refuseSubscriptionChange(auth, body);
  const contact = await contactOr404(ctx.deps.sql, auth, ctx.params.id!);
  const updated = await updateContact(ctx.deps.sql, auth.org.id, contact.id, {
    firstName: body.first_name,
    lastName: body.last_name,
    properties: body.properties,
    unsubscribed: body.unsubscribed,
  });
  if (!updated) throw notFound('Contact');
  ctx.body = renderContact(updated);
};

const remove: Handler = async (ctx) => {
  const auth = ctx.state.auth;
  const contact = await contactOr404(ctx.deps.sql, auth, ctx.params.id!);
  const deleted = await deleteContact(ctx.deps.sql, auth.org.id, contact.id);
  if (!deleted) throw notFound('Contact');
  // `contact` and `deleted` are Resend's fields; `id` matches Tern's other deletes.
  ctx.body = { object: 'contact', id: deleted.id, contact: deleted.id, deleted: true };
};

export const contactHandlers: Handlers = {
  'POST /contacts': upsert,
  'GET /contacts': list,
  'GET /contacts/:id': get,
  'PATCH /contacts/:id': patch,
  'DELETE /contacts/:id': remove,
  // Resend SDK calls given an audienceId; Tern has no audiences, the id is ignored.
  'POST /audiences/:audience_id/contacts': upsert,
  'GET /audiences/:audience_id/contacts': list,
  'GET /audiences/:audience_id/contacts/:id': get,
  'PATCH /audiences/:audience_id/contacts/:id': patch,
  'DELETE /audiences/:audience_id/contacts/:id': remove,
};
