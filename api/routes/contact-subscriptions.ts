// A contact's subscriptions (DESIGN §5): the global `unsubscribed` flag and one choice per topic;
// a topic without a choice follows its default_subscription. Setting them is closed to
// domain-restricted keys (SPEC "Domain restriction" 5; the permission row says `deny`).
// PATCH / GET /contacts/{id}/topics are the Resend SDK's shapes of the same thing.
import { updateContact, type ContactRow } from '../../shared/db/contacts.js';
import type { Db, Sql } from '../../shared/db/pool.js';
import { contactSubscriptions, setSubscriptions } from '../../shared/db/topics.js';
import { notFound } from '../../shared/errors.js';
import { type SubscriptionsBody, type TopicChoice } from '../schemas/contacts.js';
import type { Handlers } from '../types.js';
import { checkedChoices, contactOr404 } from './contacts-render.js';
import { routeBody } from '../route-schemas.js';

async function renderSubscriptions(db: Db, contact: ContactRow) {
  const rows = await contactSubscriptions(db, contact.org_id, contact.id);
  return {
    object: 'subscriptions',
    contact_id: contact.id,
    email: contact.email,
    unsubscribed: contact.unsubscribed,
    topics: rows.map((r) => ({
      id: r.topic.id,
      name: r.topic.name,
      default_subscription: r.topic.default_subscription,
      subscription: r.subscription,
      // false: the contact follows the topic's default
      explicit: r.choice !== null,
    })),
  };
}

/** Applies choices (and the global flag) in one transaction; returns the contact as it is now. */
async function apply(
  db: Sql,
  contact: ContactRow,
  choices: TopicChoice[],
  unsubscribed: boolean | undefined,
  where: string,
): Promise<ContactRow> {
  return await db.begin(async (tx) => {
    const checked = await checkedChoices(tx, contact.org_id, choices, where);
    await setSubscriptions(tx, contact.id, checked);
    if (unsubscribed === undefined) return contact;
    const updated = await updateContact(tx, contact.org_id, contact.id, { unsubscribed });
    if (!updated) throw notFound('Contact');
    return updated;
  });
}

export const subscriptionHandlers: Handlers = {
  'POST /contacts/:id/subscriptions': async (ctx) => {
    const body = routeBody<SubscriptionsBody>(ctx);
    const { sql } = ctx.deps;
    const contact = await contactOr404(sql, ctx.state.auth, ctx.params.id!);
    const now = await apply(sql, contact, body.topics ?? [], body.unsubscribed, 'body.topics');
    ctx.body = await renderSubscriptions(sql, now);
  },

  'GET /contacts/:id/subscriptions': async (ctx) => {
    const contact = await contactOr404(ctx.deps.sql, ctx.state.auth, ctx.params.id!);
    ctx.body = await renderSubscriptions(ctx.deps.sql, contact);
  },

  'PATCH /contacts/:id/topics': async (ctx) => {
    const choices = routeBody<TopicChoice[]>(ctx);
    const contact = await contactOr404(ctx.deps.sql, ctx.state.auth, ctx.params.id!);
    await apply(ctx.deps.sql, contact, choices, undefined, 'body');
    ctx.body = { id: contact.id };
  },

  // Resend's list of a contact's topics (every topic, one page).
  'GET /contacts/:id/topics': async (ctx) => {
    const contact = await contactOr404(ctx.deps.sql, ctx.state.auth, ctx.params.id!);
    const rows = await contactSubscriptions(ctx.deps.sql, contact.org_id, contact.id);
    ctx.body = {
      object: 'list',
      has_more: false,
      data: rows.map((r) => ({
        id: r.topic.id,
        name: r.topic.name,
        description: r.topic.description,
        subscription: r.subscription,
      })),
    };
  },
};
