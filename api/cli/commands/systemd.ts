// `tern systemd --user tern [--out DIR]`: writes systemd units for this install into a folder the
// operator reviews and copies (docs/deployment.md). Nothing is installed or started.
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { packageRoot } from '../../../shared/paths.js';
import { CliError, UsageError, type Command } from '../command.js';
import { environmentFile, generateUnits, parseProcfile, readme } from '../systemd/units.js';

const NAME = /^[a-z_][a-z0-9_-]{0,31}$/;

const systemd: Command = {
  name: 'systemd',
  summary: 'write systemd units for the Procfile (one per process, web and worker templated) into a folder',
  options: {
    user: { type: 'string', value: 'user', help: 'system user the processes run as', required: true },
    group: { type: 'string', value: 'group', help: 'their group (default: the user)' },
    out: { type: 'string', value: 'dir', help: 'folder to write into (default ./tern-systemd)' },
    'env-file': {
      type: 'string',
      value: 'path',
      help: 'where the units read their environment (default /etc/tern/tern.env)',
    },
    node: { type: 'string', value: 'path', help: 'node binary (default: the one running this command)' },
    force: { type: 'boolean', help: 'write into a folder that already has files' },
    json: { type: 'boolean', help: 'print {"out","files"} as JSON' },
  },
  async run(values, ctx) {
    const user = String(values.user).trim();
    const group = typeof values.group === 'string' ? values.group.trim() : user;
    for (const [flag, v] of [
      ['user', user],
      ['group', group],
    ] as const) {
      if (!NAME.test(v)) throw new UsageError(`--${flag} must be a system user or group name, got "${v}"`);
    }
    const envFile = typeof values['env-file'] === 'string' ? values['env-file'] : '/etc/tern/tern.env';
    const node = typeof values.node === 'string' ? values.node : process.execPath;
    for (const [flag, v] of [
      ['env-file', envFile],
      ['node', node],
    ] as const) {
      if (!v.startsWith('/')) throw new UsageError(`--${flag} must be an absolute path, got "${v}"`);
    }
    const out = resolve(typeof values.out === 'string' ? values.out : 'tern-systemd');
    const existing = await readdir(out).catch(() => [] as string[]);
    if (existing.length > 0 && !values.force) {
      throw new CliError(`${out} already has files: review or remove them, or pass --force to overwrite`);
    }
    const root = packageRoot();
    const entries = parseProcfile(await readFile(join(root, 'Procfile'), 'utf8'));
    if (!entries.some((e) => e.name === 'release')) throw new CliError(`${root}/Procfile has no release process`);
    const options = { user, group, root, node, envFile };
    const units = generateUnits(entries, options);
    const files = [...units, { name: 'tern.env', text: environmentFile(randomBytes(36).toString('base64url')) }];
    files.push({
      name: 'README',
      text: readme(
        options,
        files.map((f) => f.name),
      ),
    });
    await mkdir(out, { recursive: true });
    for (const f of files) {
      await writeFile(join(out, f.name), f.text, { mode: f.name === 'tern.env' ? 0o600 : 0o644 });
    }
    if (values.json) return ctx.json({ out, files: files.map((f) => f.name) });
    ctx.out(`Wrote ${files.length} files to ${out}:`);
    for (const f of files) ctx.out(`  ${f.name}`);
    ctx.out(`Review them (tern.env first), then follow ${join(out, 'README')}.`);
  },
};

export const systemdCommands: Command[] = [systemd];
