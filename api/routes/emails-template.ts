// The template step of a send: resolves `template: {id, version?, variables?}` into subject,
// html, text and from, or leaves the message as given when it names no template.
import type { AuthContext } from '../../shared/auth.js';
import type { Sql } from '../../shared/db/pool.js';
import { validationError } from '../../shared/errors.js';
import type { SendEmailBody } from '../schemas/emails.js';
import type { ResolvedTemplate } from './emails-input.js';

export async function resolveForSend(
  _sql: Sql,
  _auth: AuthContext,
  where: string,
  body: SendEmailBody,
): Promise<ResolvedTemplate | undefined> {
  if (!body.template) return undefined;
  // Template rendering lives in shared/templates.ts (branch h-templates); until it is merged a
  // template send is refused rather than stored without content.
  throw validationError(`${where}.template: templates are not available in this build`);
}
