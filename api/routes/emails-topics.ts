// The topic of a send (`topic_id`, whose unsubscribe link opts the contact out of it): it must be
// a topic of the key's organization, as for a broadcast (api/routes/broadcasts-input.ts); an
// unknown id, or another organization's, is 422 naming the field. A batch asks once for all.
import type { AuthContext } from '../../shared/auth.js';
import type { Db } from '../../shared/db/pool.js';
import { findTopics } from '../../shared/db/topics.js';
import { validationError } from '../../shared/errors.js';
import { hasNul } from '../text-checks.js';

/** The organization's topics among the `topic_id`s the bodies name (bodies not yet validated). */
export async function sendTopics(db: Db, auth: AuthContext, bodies: unknown[]): Promise<Set<string>> {
  const ids = new Set<string>();
  for (const b of bodies) {
    const id = (b as { topic_id?: unknown } | null)?.topic_id;
    // Items are validated one by one later; only an id that could pass is looked up.
    if (typeof id === 'string' && id.length > 0 && id.length <= 64 && !hasNul(id)) ids.add(id);
  }
  const rows = await findTopics(db, auth.org.id, [...ids]);
  return new Set(rows.map((t) => t.id));
}

export function checkTopic(where: string, topicId: string | undefined, known: Set<string>): void {
  if (topicId !== undefined && !known.has(topicId)) {
    throw validationError(`${where}.topic_id: "${topicId}" is not a topic of this organization`);
  }
}
