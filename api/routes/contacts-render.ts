// Shared pieces of the contact routes: the rendered record (Resend's contact fields), the look-up
// by id or address, and the rule that a domain-restricted key may not change subscriptions.
import { isRestricted, type AuthContext } from '../../shared/auth.js';
import { findContact, type ContactRow } from '../../shared/db/contacts.js';
import { findTopics, type Subscription } from '../../shared/db/topics.js';
import type { Db } from '../../shared/db/pool.js';
import { ApiError, notFound, validationError } from '../../shared/errors.js';

export function renderContact(c: ContactRow) {
  return {
    object: 'contact' as const,
    id: c.id,
    email: c.email,
    first_name: c.first_name,
    last_name: c.last_name,
    properties: c.properties,
    unsubscribed: c.unsubscribed,
    created_at: c.created_at.toISOString(),
  };
}

export async function contactOr404(db: Db, auth: AuthContext, ref: string): Promise<ContactRow> {
  const contact = await findContact(db, auth.org.id, ref);
  if (!contact) throw notFound('Contact');
  return contact;
}

/**
 * SPEC "Domain restriction" 5: a restricted key cannot set subscriptions. The upsert it may call
 * (list signup) and the update it may call therefore cannot carry them either.
 */
export function refuseSubscriptionChange(auth: AuthContext, body: { unsubscribed?: unknown; topics?: unknown }): void {
  if (!isRestricted(auth)) return;
  const field = body.unsubscribed !== undefined ? 'unsubscribed' : body.topics !== undefined ? 'topics' : null;
  if (field) {
    throw new ApiError(
      'forbidden_domain',
      `Domain-restricted keys cannot change subscriptions (body.${field}); use a key without a domain restriction`,
    );
  }
}

/** The choices with their topics checked to be the org's: an unknown id is a 422 naming it. */
export async function checkedChoices(
  db: Db,
  orgId: string,
  choices: { id: string; subscription: Subscription }[],
  where: string,
): Promise<{ topicId: string; subscription: Subscription }[]> {
  const known = new Set((await findTopics(db, orgId, [...new Set(choices.map((c) => c.id))])).map((t) => t.id));
  const bad = choices.findIndex((c) => !known.has(c.id));
  if (bad >= 0) throw validationError(`${where}.${bad}.id: "${choices[bad]!.id}" is not a topic of this organization`);
  return choices.map((c) => ({ topicId: c.id, subscription: c.subscription }));
}
