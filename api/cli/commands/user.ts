// `tern user reset-password`: a new console password for a user who lost theirs (the demo's is
// printed once, by the first `npm start`). Every console session of the user ends, and the reset
// is logged (USER_PASSWORD_RESET) since it bypasses the old password.
import { pino } from 'pino';
import { deleteOtherSessions, findUserByEmail, updateUserPassword } from '../../../shared/db/users.js';
import { generatePassword, hashPassword } from '../../../shared/passwords.js';
import { CliError, UsageError, type Command } from '../command.js';

const userResetPassword: Command = {
  name: 'user reset-password',
  summary: "give a console user a new password (shown once) and end the user's sessions",
  options: {
    email: { type: 'string', value: 'email', help: 'e-mail address of the console user', required: true },
    json: { type: 'boolean', help: 'print the result as JSON' },
  },
  async run(values, ctx) {
    const email = String(values.email).trim();
    if (email === '') throw new UsageError('--email must be an e-mail address');
    const sql = ctx.sql();
    const user = await findUserByEmail(sql, email);
    if (!user) throw new CliError(`no console user has the e-mail address ${email}`);
    const password = generatePassword();
    const ended = await sql.begin(async (tx) => {
      await updateUserPassword(tx, user.id, await hashPassword(password));
      // No session is kept: '' is no session's id hash.
      return await deleteOtherSessions(tx, user.id, '');
    });
    // stderr: stdout carries the --json document.
    const log = pino({ name: 'tern-cli', level: ctx.config().logLevel }, pino.destination({ dest: 2, sync: true }));
    log.warn(
      { event: 'USER_PASSWORD_RESET', orgId: user.org_id, userId: user.id, endedSessions: ended },
      'console password reset by an operator',
    );
    if (values.json) return ctx.json({ user: { id: user.id, email: user.email, password }, ended_sessions: ended });
    ctx.out(`Console user  ${user.id}  ${user.email}  password: ${password}`);
    ctx.out(`The password is shown only now; ${ended} console session(s) of this user ended.`);
  },
};

export const userCommands: Command[] = [userResetPassword];
