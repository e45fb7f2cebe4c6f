// Topics (DESIGN §5; management: ADMIN, live keys). A topic's default_subscription decides
// what a contact without an explicit choice receives: opt_in = subscribed, opt_out = not.
import { deleteTopic, findTopic, insertTopic, listTopics, updateTopic, type TopicRow } from '../../shared/db/topics.js';
import { notFound } from '../../shared/errors.js';
import { type CreateTopicBody, type ListTopicsQuery, type PatchTopicBody } from '../schemas/topics.js';
import type { Handlers } from '../types.js';
import { listEnvelope } from '../validate.js';
import { routeBody, routeQuery } from '../route-schemas.js';

function render(t: TopicRow) {
  return {
    object: 'topic',
    id: t.id,
    name: t.name,
    description: t.description,
    default_subscription: t.default_subscription,
    created_at: t.created_at.toISOString(),
  };
}

export const topicHandlers: Handlers = {
  'POST /topics': async (ctx) => {
    const body = routeBody<CreateTopicBody>(ctx);
    const topic = await insertTopic(ctx.deps.sql, {
      orgId: ctx.state.auth.org.id,
      name: body.name,
      description: body.description ?? null,
      defaultSubscription: body.default_subscription,
    });
    ctx.status = 201;
    ctx.body = render(topic);
  },

  'GET /topics': async (ctx) => {
    const q = routeQuery<ListTopicsQuery>(ctx);
    const rows = await listTopics(ctx.deps.sql, ctx.state.auth.org.id, q);
    ctx.body = listEnvelope(rows, q.limit, render);
  },

  'GET /topics/:id': async (ctx) => {
    const topic = await findTopic(ctx.deps.sql, ctx.state.auth.org.id, ctx.params.id!);
    if (!topic) throw notFound('Topic');
    ctx.body = render(topic);
  },

  'PATCH /topics/:id': async (ctx) => {
    const body = routeBody<PatchTopicBody>(ctx);
    const topic = await updateTopic(ctx.deps.sql, ctx.state.auth.org.id, ctx.params.id!, {
      name: body.name,
      description: body.description,
      defaultSubscription: body.default_subscription,
    });
    if (!topic) throw notFound('Topic');
    ctx.body = render(topic);
  },

  // Contacts' choices for the topic go with it (contact_topics cascades).
  'DELETE /topics/:id': async (ctx) => {
    const topic = await deleteTopic(ctx.deps.sql, ctx.state.auth.org.id, ctx.params.id!);
    if (!topic) throw notFound('Topic');
    ctx.body = { object: 'topic', id: topic.id, deleted: true };
  },
};
