// `tern org create`: an organization with its first admin user (console login) and ADMIN key.
import { createOrganization } from '../../../shared/bootstrap.js';
import { CliError, UsageError, type Command } from '../command.js';

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

const orgCreate: Command = {
  name: 'org create',
  summary: 'create an organization, its admin user and its ADMIN key',
  options: {
    name: { type: 'string', value: 'name', help: 'organization name', required: true },
    'admin-email': { type: 'string', value: 'email', help: 'e-mail address of the admin user', required: true },
    json: { type: 'boolean', help: 'print the result as JSON' },
  },
  async run(values, ctx) {
    const name = String(values.name).trim();
    const adminEmail = String(values['admin-email']).trim();
    if (name.length > 200) throw new UsageError('--name must be at most 200 characters');
    if (!EMAIL.test(adminEmail)) throw new UsageError(`--admin-email must be an e-mail address, got "${adminEmail}"`);
    const created = await createOrganization(ctx.sql(), ctx.config().brand, { name, adminEmail }).catch(
      (err: unknown) => {
        if ((err as { code?: string }).code === '23505') {
          throw new CliError(`a user with the e-mail address ${adminEmail} already exists`);
        }
        throw err;
      },
    );
    if (values.json) return ctx.json(created);
    const { organization: o, user: u, key: k } = created;
    ctx.out(`Organization  ${o.id}  ${o.name}`);
    ctx.out(`Admin user    ${u.id}  ${u.email}  password: ${u.password}`);
    ctx.out(`ADMIN key     ${k.id}  ${k.token}`);
    ctx.out('The password and the key are shown only now: keep them somewhere safe.');
  },
};

export const orgCommands: Command[] = [orgCreate];
