// The message a console route names (`:id`), within the signed-in user's organization (live or
// test: the console sees both), or a 404 page.
import { getOrgEmail } from '../../shared/db/email-detail.js';
import type { EmailRow } from '../../shared/db/emails.js';
import type { SessionRow } from '../../shared/db/users.js';
import { notFound } from '../../shared/errors.js';
import { isId } from '../../shared/ids.js';
import type { ApiContext } from '../types.js';

export async function loadOrgEmail(ctx: ApiContext, session: SessionRow): Promise<EmailRow> {
  const id = ctx.params.id ?? '';
  const email = isId(id, 'em') ? await getOrgEmail(ctx.deps.sql, session.org_id, id) : null;
  if (!email) throw notFound('Email');
  return email;
}

/** Whether it can still be canceled: scheduled, or not yet handed to delivery. */
export function cancelable(e: EmailRow): boolean {
  return e.status === 'scheduled' || e.status === 'queued';
}
