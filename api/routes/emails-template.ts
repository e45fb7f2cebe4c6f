// The template step of a send: resolves `template: {id (or slug), version?, variables?}` into
// subject, html, text and from (shared/templates.ts), or leaves the message as given when it
// names no template.
import type { AuthContext } from '../../shared/auth.js';
import type { Sql } from '../../shared/db/pool.js';
import { resolveTemplate, type ResolvedTemplate } from '../../shared/templates.js';
import type { SendEmailBody } from '../schemas/emails.js';

export type { ResolvedTemplate };

export async function resolveForSend(
  sql: Sql,
  auth: AuthContext,
  body: SendEmailBody,
): Promise<ResolvedTemplate | undefined> {
  if (!body.template) return undefined;
  return await resolveTemplate(sql, auth.org.id, body.template);
}
