// API keys in the console: list, mint (the token is shown once, on the answer to the POST),
// revoke, rotate. Members mint SEND keys and manage SEND keys; admins mint and manage every
// tier, ADMIN included (live only: the SPEC mints ADMIN keys nowhere else).
import { audit } from './audit.js';
import { listOrgDomains, type DomainRow } from '../../shared/db/domains.js';
import { getKey, listKeys, revokeKey, rotateKeyToken, type KeyRow } from '../../shared/db/keys.js';
import type { SessionRow } from '../../shared/db/users.js';
import { ApiError, notFound, validationError } from '../../shared/errors.js';
import { MODES, mintKey, mintToken, type Permission } from '../../shared/keys.js';
import type { ApiContext } from '../types.js';
import { choice, field } from './form.js';
import { csrfField, html, postButton, when, type Safe } from './html.js';
import { redirect, show, type ConsoleRequest } from './respond.js';
import { card, details, idCode, selectField, tableCard } from './ui.js';

const PAGE_SIZE = 50;
const GRACE_CHOICES: [number, string][] = [
  [0, 'now'],
  [3600, 'in 1 hour'],
  [86400, 'in 24 hours'],
  [604800, 'in 7 days'],
];

function mintable(session: SessionRow): readonly Permission[] {
  return session.role === 'admin' ? ['SEND', 'FULL', 'ADMIN'] : ['SEND'];
}

function mayManage(session: SessionRow, key: KeyRow): boolean {
  return session.role === 'admin' || key.permission === 'SEND';
}

function domainNames(domains: DomainRow[], ids: string[]): string {
  if (ids.length === 0) return 'all';
  return domains
    .filter((d) => ids.includes(d.id))
    .map((d) => d.name)
    .join(', ');
}

function keyActions(session: SessionRow, k: KeyRow): Safe {
  if (k.revoked_at || !mayManage(session, k)) return html``;
  const revoke = postButton(session, `/console/keys/${k.id}/revoke`, 'Revoke');
  if (k.permission === 'ADMIN') return html`<div class="row-actions">${revoke}</div>`;
  return html`<div class="row-actions">
    ${revoke} <a class="btn" href="/console/keys/${k.id}/rotate" aria-label="Rotate ${k.name}">Rotate…</a>
  </div>`;
}

function keyRow(session: SessionRow, domains: DomainRow[], k: KeyRow): Safe {
  return html`<tr data-key-id="${k.id}"${k.revoked_at ? html` class="revoked-row"` : ''}>
    <td${k.revoked_at ? html` class="revoked"` : ''}><strong>${k.name}</strong><br />${idCode(k.id)}</td>
    <td class="nowrap"><code>${k.token_prefix}…</code></td>
    <td>
      <span class="nowrap">${k.permission} · ${k.mode}</span><br /><span class="muted"
        >${k.domain_ids.length ? domainNames(domains, k.domain_ids) : 'every domain'}</span
      >
    </td>
    <td class="nowrap">created ${when(k.created_at)}<br />used ${when(k.last_used_at)}</td>
    <td>${k.revoked_at ? html`revoked ${when(k.revoked_at)}` : 'active'}</td>
    <td>${keyActions(session, k)}</td>
  </tr>`;
}

/** Rotate's confirmation: when the old token stops working, then the POST that rotates. */
export async function rotateConfirm(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const key = await managedKey(ctx, session);
  if (key.permission === 'ADMIN' || key.revoked_at) throw new ApiError('invalid_state', 'This key cannot be rotated');
  show(ctx, session, {
    title: 'Rotate this key?',
    active: '/console/keys',
    body: html`<section class="card confirm">
      <p>
        <strong>${key.name}</strong> (${idCode(key.id)}) gets a new token, shown once. Its SMTP username stays the same;
        the old token keeps working until the time you choose.
      </p>
      <form method="post" action="/console/keys/${key.id}/rotate" class="stack">
        ${csrfField(session)}
        ${selectField({
          name: 'expires_in',
          label: 'Old token stops working',
          value: '86400',
          options: GRACE_CHOICES.map(([s, label]) => [String(s), label]),
        })}
        <div class="confirm-actions">
          <button type="submit" class="btn primary">Rotate key</button>
          <a class="btn" href="/console/keys">Keep it, go back</a>
        </div>
      </form>
    </section>`,
  });
}

function mintForm(session: SessionRow, domains: DomainRow[]): Safe {
  const perms = mintable(session).map(
    (p) => html`<option value="${p}">${p}${p === 'ADMIN' ? ' (live only)' : ''}</option>`,
  );
  const boxes = domains.map(
    (d) =>
      html`<label class="plain"
        ><input type="checkbox" name="domains" value="${d.id}" /> ${d.name} (${d.status})</label
      > `,
  );
  return html`<h2>Mint a key</h2>
    <form method="post" action="/console/keys" class="stack">
      ${csrfField(session)} <label for="name">Name</label
      ><input type="text" id="name" name="name" maxlength="100" required /> <label for="permission">Permission</label
      ><select id="permission" name="permission">
        ${perms}
      </select>
      <label for="mode">Mode</label
      ><select id="mode" name="mode">
        <option value="live">live</option>
        <option value="test">test</option>
      </select>
      <fieldset>
        <legend>Restrict to domains (none checked = every domain)</legend>
        ${boxes.length ? boxes : html`<span class="muted">No domains yet.</span>`}
      </fieldset>
      <p><button type="submit">Mint key</button></p>
    </form>`;
}

export async function keysPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const after = typeof ctx.query.after === 'string' && /^key_\w+$/.test(ctx.query.after) ? ctx.query.after : undefined;
  const [rows, domains] = await Promise.all([
    listKeys(ctx.deps.sql, session.org_id, { limit: PAGE_SIZE, after }),
    listOrgDomains(ctx.deps.sql, session.org_id),
  ]);
  const keys = rows.slice(0, PAGE_SIZE);
  const more =
    rows.length > PAGE_SIZE ? html`<p><a href="/console/keys?after=${keys.at(-1)!.id}">Older keys</a></p>` : '';
  show(ctx, session, {
    title: 'API keys',
    active: '/console/keys',
    body: html`${tableCard(
      ['Name', 'Token', 'Access', 'Created, last used', 'Status', { label: 'Actions', hidden: true }],
      keys.map((k) => keyRow(session, domains, k)),
      { label: 'API keys' },
    )}
    ${more}${mintForm(session, domains)}`,
  });
}

function tokenOnce(token: string): Safe {
  return html`<p class="banner warn">Copy this token now. It is shown only once and cannot be recovered.</p>
    <div id="new-token"><code class="token" data-token>${token}</code></div>
    <p><button type="button" class="btn" data-copy="#new-token" hidden>Copy token</button></p>`;
}

export async function mintKeyAction(ctx: ApiContext, { session, form }: ConsoleRequest): Promise<void> {
  const name = field(form, 'name', 'Name', 100);
  const permission = choice(form, 'permission', 'Permission', ['SEND', 'FULL', 'ADMIN'] as const);
  const mode = choice(form, 'mode', 'Mode', MODES);
  if (!mintable(session).includes(permission)) {
    throw new ApiError('forbidden', `A ${session.role} cannot mint ${permission} keys; ask an admin`);
  }
  if (permission === 'ADMIN' && mode !== 'live') throw validationError('ADMIN keys are live only');
  const domains = await listOrgDomains(ctx.deps.sql, session.org_id);
  const domainIds = [...new Set(form.getAll('domains'))];
  const unknown = domainIds.find((id) => !domains.some((d) => d.id === id));
  if (unknown !== undefined) throw validationError(`"${unknown}" is not a domain of this organization`);
  const { key, token } = await mintKey(ctx.deps.sql, ctx.deps.config.brand, {
    orgId: session.org_id,
    name,
    mode,
    permission,
    domainIds,
    createdBy: session.user_id,
  });
  ctx.state.log.info({ event: 'CONSOLE_KEY_MINTED', keyId: key.id, userId: session.user_id, permission }, 'key minted');
  await audit(ctx, session, 'key.minted', { type: 'key', id: key.id }, { permission, mode, domain_ids: domainIds });
  show(ctx, session, {
    title: 'Key minted',
    active: '/console/keys',
    status: 201,
    body: html`${tokenOnce(token)}
      ${card(
        details([
          ['Name', key.name],
          ['Id (SMTP username)', html`<code>${key.id}</code>`],
          ['Permission', key.permission],
          ['Mode', key.mode],
          ['Domains', domainNames(domains, key.domain_ids)],
        ]),
      )}
      <p><a href="/console/keys">Back to API keys</a></p>`,
  });
}

async function managedKey(ctx: ApiContext, session: SessionRow): Promise<KeyRow> {
  const key = await getKey(ctx.deps.sql, session.org_id, ctx.params.id ?? '');
  if (!key) throw notFound('API key');
  if (!mayManage(session, key)) throw new ApiError('forbidden', `A ${session.role} can only manage SEND keys`);
  return key;
}

export async function revokeKeyAction(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const key = await managedKey(ctx, session);
  await revokeKey(ctx.deps.sql, session.org_id, key.id);
  await ctx.deps.auth.invalidateKey(key.id);
  ctx.state.log.info({ event: 'CONSOLE_KEY_REVOKED', keyId: key.id, userId: session.user_id }, 'key revoked');
  await audit(ctx, session, 'key.revoked', { type: 'key', id: key.id });
  redirect(ctx, '/console/keys');
}

export async function rotateKeyAction(ctx: ApiContext, { session, form }: ConsoleRequest): Promise<void> {
  const key = await managedKey(ctx, session);
  if (key.permission === 'ADMIN') {
    throw new ApiError('forbidden', 'ADMIN keys are not rotated: mint a new one, then revoke this one');
  }
  if (key.revoked_at) throw new ApiError('invalid_state', 'A revoked key cannot be rotated');
  const grace = Number(form.get('expires_in') ?? 86400);
  if (!GRACE_CHOICES.some(([s]) => s === grace)) throw validationError('Choose when the old token stops working');
  const { sql, config } = ctx.deps;
  const t = mintToken(config.brand, key.mode);
  const expiresAt = await sql.begin((tx) => rotateKeyToken(tx, key.id, t, grace));
  await ctx.deps.auth.invalidateKey(key.id);
  ctx.state.log.info({ event: 'CONSOLE_KEY_ROTATED', keyId: key.id, userId: session.user_id }, 'key rotated');
  await audit(ctx, session, 'key.rotated', { type: 'key', id: key.id }, { expires_in: grace });
  show(ctx, session, {
    title: 'Key rotated',
    active: '/console/keys',
    body: html`${tokenOnce(t.token)}
      <p>
        New token for <strong>${key.name}</strong> (<code>${key.id}</code>). The previous token stops working at
        ${when(expiresAt)}.
      </p>
      <p><a href="/console/keys">Back to API keys</a></p>`,
  });
}
