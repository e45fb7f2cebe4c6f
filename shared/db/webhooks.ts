// Webhook endpoints (DESIGN §5 Webhooks, §7). Signing secrets are stored sealed
// (shared/secrets.ts): the rows read here carry them sealed, but for the new secret that
// insertWebhook and rotateWebhookSecret return in the clear (the one time it is shown).
import { newId } from '../ids.js';
import type { SecretBox } from '../secrets.js';
import type { Db } from './pool.js';
import type { Page } from './keys.js';

export interface WebhookRow {
  id: string;
  org_id: string;
  url: string;
  events: string[];
  description: string | null;
  status: 'enabled' | 'disabled';
  disabled_reason: string | null;
  signing_secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  failing_since: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface NewWebhook {
  orgId: string;
  url: string;
  events: string[];
  description: string | null;
  secret: string;
}

export async function insertWebhook(db: Db, box: SecretBox, w: NewWebhook): Promise<WebhookRow> {
  const [row] = await db<WebhookRow[]>`
    insert into webhooks (id, org_id, url, events, description, signing_secret)
    values (${newId('wh')}, ${w.orgId}, ${w.url}, ${w.events}, ${w.description}, ${box.seal(w.secret, 'webhook-secret')})
    returning *`;
  return { ...row!, signing_secret: w.secret };
}

export async function getWebhook(db: Db, orgId: string, id: string): Promise<WebhookRow | null> {
  const [row] = await db<WebhookRow[]>`select * from webhooks where org_id = ${orgId} and id = ${id}`;
  return row ?? null;
}

/** Newest first; fetches limit + 1. */
export async function listWebhooks(db: Db, orgId: string, page: Page): Promise<WebhookRow[]> {
  if (page.before) {
    const rows = await db<WebhookRow[]>`
      select * from webhooks where org_id = ${orgId} and id > ${page.before}
      order by id asc limit ${page.limit + 1}`;
    return rows.reverse();
  }
  return await db<WebhookRow[]>`
    select * from webhooks
    where org_id = ${orgId} ${page.after ? db`and id < ${page.after}` : db``}
    order by id desc limit ${page.limit + 1}`;
}

export interface WebhookPatch {
  url?: string;
  events?: string[];
  description?: string | null;
  status?: 'enabled' | 'disabled';
}

export async function updateWebhook(db: Db, orgId: string, id: string, p: WebhookPatch): Promise<WebhookRow | null> {
  const [row] = await db<WebhookRow[]>`
    update webhooks set
      url = coalesce(${p.url ?? null}, url),
      events = coalesce(${p.events ?? null}::text[], events),
      description = ${p.description === undefined ? db`description` : db`${p.description}`},
      status = coalesce(${p.status ?? null}, status),
      -- Re-enabling starts afresh: the failure run and the platform's reason are forgotten.
      disabled_reason = case when ${p.status ?? null}::text is not null then null else disabled_reason end,
      failing_since = case when ${p.status ?? null}::text = 'enabled' then null else failing_since end,
      updated_at = now()
    where org_id = ${orgId} and id = ${id}
    returning *`;
  return row ?? null;
}

export async function deleteWebhook(db: Db, orgId: string, id: string): Promise<WebhookRow | null> {
  const [row] = await db<WebhookRow[]>`delete from webhooks where org_id = ${orgId} and id = ${id} returning *`;
  return row ?? null;
}

/** The new secret signs from now on; the old one keeps signing until `expiresInSeconds` pass. */
export async function rotateWebhookSecret(
  db: Db,
  box: SecretBox,
  orgId: string,
  id: string,
  secret: string,
  expiresInSeconds: number,
): Promise<WebhookRow | null> {
  const [row] = await db<WebhookRow[]>`
    update webhooks set
      previous_secret = signing_secret,
      previous_secret_expires_at = now() + make_interval(secs => ${expiresInSeconds}),
      signing_secret = ${box.seal(secret, 'webhook-secret')},
      updated_at = now()
    where org_id = ${orgId} and id = ${id}
    returning *`;
  return row ? { ...row, signing_secret: secret } : null;
}

/** A success ends the endpoint's failure run. */
export async function markWebhookHealthy(db: Db, id: string): Promise<void> {
  await db`update webhooks set failing_since = null where id = ${id} and failing_since is not null`;
}

/**
 * Records a failed attempt against the endpoint; disables it when it has been failing without
 * a single success for longer than `disableAfterMs`. Returns the endpoint when this call disabled it.
 */
export async function markWebhookFailing(
  db: Db,
  id: string,
  disableAfterMs: number,
): Promise<Pick<WebhookRow, 'id' | 'org_id' | 'url' | 'disabled_reason'> | null> {
  await db`update webhooks set failing_since = now() where id = ${id} and failing_since is null`;
  const rows = await db`
    update webhooks set status = 'disabled', updated_at = now(),
      disabled_reason = 'failing continuously since ' || to_char(failing_since at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
    where id = ${id} and status = 'enabled'
      and failing_since < now() - make_interval(secs => ${disableAfterMs / 1000})
    returning id, org_id, url, disabled_reason`;
  return (rows[0] as Pick<WebhookRow, 'id' | 'org_id' | 'url' | 'disabled_reason'> | undefined) ?? null;
}
