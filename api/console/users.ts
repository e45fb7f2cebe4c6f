// Console users: admins add members and admins (with a generated password, shown once); every
// user changes their own password, which ends their other sessions.
import { audit } from './audit.js';
import { insertUser } from '../../shared/db/orgs.js';
import { deleteOtherSessions, getUserWithHash, listOrgUsers, updateUserPassword } from '../../shared/db/users.js';
import { uniqueViolation } from '../../shared/domains/setup.js';
import { ApiError, validationError } from '../../shared/errors.js';
import { generatePassword, hashPassword, verifyPassword } from '../../shared/passwords.js';
import type { ApiContext } from '../types.js';
import { choice, field } from './form.js';
import { EMAIL_BUCKET, throttle } from './login.js';
import { csrfField, html, when } from './html.js';
import { totpSection } from './totp.js';
import { redirect, show, type ConsoleRequest } from './respond.js';
import { doneBanner, queryString, tableCard } from './ui.js';

const MIN_PASSWORD = 12;
const MAX_PASSWORD = 1024;
const EMAIL = /^[^\s@<>"]+@[^\s@<>"]+\.[^\s@<>"]+$/;

export async function usersPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const users = await listOrgUsers(ctx.deps.sql, session.org_id);
  const rows = users.map(
    (u) =>
      html`<tr data-user="${u.id}">
        <td>${u.email}</td>
        <td>${u.role}</td>
        <td>${when(u.created_at)}</td>
      </tr>`,
  );
  show(ctx, session, {
    title: 'Users',
    active: '/console/users',
    body: html`${tableCard(['Email', 'Role', 'Added'], rows, { label: 'Users' })}
      <h2>Add a user</h2>
      <form method="post" action="/console/users" class="stack">
        ${csrfField(session)} <label for="email">Email</label
        ><input type="email" id="email" name="email" maxlength="254" required /> <label for="role">Role</label
        ><select id="role" name="role">
          <option value="member">member</option>
          <option value="admin">admin</option>
        </select>
        <p><button type="submit">Add user</button></p>
      </form>`,
  });
}

export async function addUserAction(ctx: ApiContext, { session, form }: ConsoleRequest): Promise<void> {
  const email = field(form, 'email', 'Email', 254);
  if (!EMAIL.test(email)) throw validationError('Email is not a valid address');
  const role = choice(form, 'role', 'Role', ['member', 'admin'] as const);
  const password = generatePassword();
  let user;
  try {
    user = await insertUser(ctx.deps.sql, {
      orgId: session.org_id,
      email,
      role,
      passwordHash: await hashPassword(password),
    });
  } catch (err) {
    if (uniqueViolation(err) === 'users_email_key')
      throw new ApiError('conflict', `A user with email ${email} already exists`);
    throw err;
  }
  ctx.state.log.info({ event: 'CONSOLE_USER_ADDED', userId: user.id, role, by: session.user_id }, 'console user added');
  await audit(ctx, session, 'user.added', { type: 'user', id: user.id }, { role });
  show(ctx, session, {
    title: 'User added',
    active: '/console/users',
    status: 201,
    body: html`<p>${user.email} can now sign in at <code>/console/login</code> as ${user.role}.</p>
      <p class="banner warn">Give them this password now; it is shown only once. They can change it under Account.</p>
      <code class="token" data-password>${password}</code>
      <p><a href="/console/users">Back to users</a></p>`,
  });
}

export async function accountPage(ctx: ApiContext, { session }: ConsoleRequest): Promise<void> {
  const done = ctx.query.changed === '1' ? html`<p class="banner ok">Your password was changed.</p>` : '';
  const totp = await totpSection(ctx, session);
  show(ctx, session, {
    title: 'Account',
    active: '/console/account',
    body: html`${done}${doneBanner(queryString(ctx.query, 'done'))}
      <p>${session.email} (${session.role}) in ${session.org_name}.</p>
      <div id="totp">${totp}</div>
      <h2>Change password</h2>
      <form method="post" action="/console/account/password" class="stack">
        ${csrfField(session)} <label for="current">Current password</label
        ><input type="password" id="current" name="current" required autocomplete="current-password" />
        <label for="password">New password (at least ${MIN_PASSWORD} characters)</label
        ><input
          type="password"
          id="password"
          name="password"
          minlength="${MIN_PASSWORD}"
          required
          autocomplete="new-password"
        />
        <label for="confirm">New password again</label
        ><input type="password" id="confirm" name="confirm" required autocomplete="new-password" />
        <p><button type="submit">Change password</button></p>
      </form>`,
  });
}

export async function changePasswordAction(ctx: ApiContext, { session, form }: ConsoleRequest): Promise<void> {
  const current = form.get('current') ?? '';
  const next = form.get('password') ?? '';
  if (next.length < MIN_PASSWORD) throw validationError(`The new password needs at least ${MIN_PASSWORD} characters`);
  if (next.length > MAX_PASSWORD) throw validationError(`The new password is longer than ${MAX_PASSWORD} characters`);
  if (next !== (form.get('confirm') ?? '')) throw validationError('The two new passwords differ');
  // The current password is a guessable secret too: a stolen session must not test it freely.
  await throttle(ctx, [[`password:${session.user_id}`, EMAIL_BUCKET]]);
  const { sql } = ctx.deps;
  const user = await getUserWithHash(sql, session.user_id);
  if (!user || !(await verifyPassword(current.slice(0, MAX_PASSWORD), user.password_hash))) {
    throw new ApiError('forbidden', 'The current password is wrong');
  }
  await updateUserPassword(sql, user.id, await hashPassword(next));
  const ended = await deleteOtherSessions(sql, user.id, session.id_hash);
  ctx.state.log.info({ event: 'CONSOLE_PASSWORD_CHANGED', userId: user.id, endedSessions: ended }, 'password changed');
  await audit(ctx, session, 'user.password_changed', { type: 'user', id: user.id }, { ended_sessions: ended });
  redirect(ctx, '/console/account?changed=1');
}
