// Topics (DESIGN §5) and a contact's subscriptions to them. A contact with no explicit choice
// for a topic follows the topic's default_subscription.
import { newId } from '../ids.js';
import { pagedRows } from './contacts.js';
import type { Page } from './keys.js';
import type { Db } from './pool.js';

export type Subscription = 'opt_in' | 'opt_out';

export interface TopicRow {
  id: string;
  org_id: string;
  name: string;
  description: string | null;
  default_subscription: Subscription;
  created_at: Date;
  updated_at: Date;
}

export async function insertTopic(
  db: Db,
  t: { orgId: string; name: string; description: string | null; defaultSubscription: Subscription },
): Promise<TopicRow> {
  const [row] = await db<TopicRow[]>`
    insert into topics (id, org_id, name, description, default_subscription)
    values (${newId('top')}, ${t.orgId}, ${t.name}, ${t.description}, ${t.defaultSubscription})
    returning *`;
  return row!;
}

export async function findTopic(db: Db, orgId: string, id: string): Promise<TopicRow | null> {
  const [row] = await db<TopicRow[]>`select * from topics where org_id = ${orgId} and id = ${id}`;
  return row ?? null;
}

/** The org's topics among `ids` (unknown ids are simply absent). */
export async function findTopics(db: Db, orgId: string, ids: string[]): Promise<TopicRow[]> {
  if (ids.length === 0) return [];
  return await db<TopicRow[]>`select * from topics where org_id = ${orgId} and id = any(${ids})`;
}

export async function listTopics(db: Db, orgId: string, page: Page): Promise<TopicRow[]> {
  return await pagedRows<TopicRow>(
    db,
    page,
    (cursor, order, limit) => db<TopicRow[]>`
      select * from topics where org_id = ${orgId} ${cursor} ${order} limit ${limit}`,
  );
}

export async function updateTopic(
  db: Db,
  orgId: string,
  id: string,
  f: {
    name?: string | undefined;
    description?: string | null | undefined;
    defaultSubscription?: Subscription | undefined;
  },
): Promise<TopicRow | null> {
  const [row] = await db<TopicRow[]>`
    update topics set
      name = ${f.name === undefined ? db`name` : db`${f.name}`},
      description = ${f.description === undefined ? db`description` : db`${f.description}`},
      default_subscription = ${f.defaultSubscription === undefined ? db`default_subscription` : db`${f.defaultSubscription}`},
      updated_at = now()
    where org_id = ${orgId} and id = ${id}
    returning *`;
  return row ?? null;
}

export async function deleteTopic(db: Db, orgId: string, id: string): Promise<TopicRow | null> {
  const [row] = await db<TopicRow[]>`delete from topics where org_id = ${orgId} and id = ${id} returning *`;
  return row ?? null;
}

export interface ContactTopicRow {
  topic: TopicRow;
  /** The contact's explicit choice, or null when it follows the default. */
  choice: Subscription | null;
  subscription: Subscription;
}

/** Every topic of the org with the contact's effective subscription, oldest topic first. */
export async function contactSubscriptions(db: Db, orgId: string, contactId: string): Promise<ContactTopicRow[]> {
  const rows = await db<(TopicRow & { choice: Subscription | null })[]>`
    select t.*, ct.subscription as choice
    from topics t
    left join contact_topics ct on ct.topic_id = t.id and ct.contact_id = ${contactId}
    where t.org_id = ${orgId}
    order by t.id asc`;
  return rows.map(({ choice, ...topic }) => ({
    topic,
    choice,
    subscription: choice ?? topic.default_subscription,
  }));
}

/** Records the contact's choices (topics already checked to be the org's). */
export async function setSubscriptions(
  db: Db,
  contactId: string,
  choices: { topicId: string; subscription: Subscription }[],
): Promise<void> {
  // One row per topic (the last choice wins): an upsert may not touch a row twice.
  const byTopic = new Map(choices.map((c) => [c.topicId, c.subscription]));
  if (byTopic.size === 0) return;
  await db`
    insert into contact_topics (contact_id, topic_id, subscription)
    select ${contactId}, x.topic_id, x.subscription
    from unnest(${[...byTopic.keys()]}::text[], ${[...byTopic.values()]}::text[])
      as x (topic_id, subscription)
    on conflict (contact_id, topic_id) do update set subscription = excluded.subscription, updated_at = now()`;
}
