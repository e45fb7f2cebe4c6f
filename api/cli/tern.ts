#!/usr/bin/env node
// `tern`: the operator's command line (migrations, organizations, domains, keys, IP pools). Each command lives in
// api/cli/commands/<name>.ts; the list below is the registry. Exit codes: 0 done, 1 the command
// failed (bad environment, unknown org, database down …), 2 wrong use of the command line.
import { parseArgs } from 'node:util';
import { ConfigError } from '../../shared/config.js';
import { CliError, commandHelp, createContext, origin, redactUrl, UsageError, type Command } from './command.js';
import { doctorCommands } from './commands/doctor.js';
import { domainCommands } from './commands/domain.js';
import { systemdCommands } from './commands/systemd.js';
import { keyCommands } from './commands/key.js';
import { migrateCommands } from './commands/migrate.js';
import { orgCommands } from './commands/org.js';
import { poolCommands } from './commands/pool.js';
import { rblCommands } from './commands/rbl.js';
import { secretsCommands } from './commands/secrets.js';
import { userCommands } from './commands/user.js';

const commands: Command[] = [
  // one line per command module
  ...migrateCommands,
  ...orgCommands,
  ...userCommands,
  ...domainCommands,
  ...keyCommands,
  ...poolCommands,
  ...rblCommands,
  ...secretsCommands,
  ...doctorCommands,
  ...systemdCommands,
];

function overview(): string {
  const width = Math.max(...commands.map((c) => c.name.length)) + 2;
  const lines = commands.map((c) => `  ${c.name.padEnd(width)}${c.summary}`);
  return `Usage: tern <command> [options]\n\nCommands:\n${lines.join('\n')}\n\nRun 'tern <command> --help' for a command's options.\n`;
}

/** The command named by the leading words of argv, and the arguments after them. */
function select(argv: string[]): { cmd: Command; rest: string[] } | null {
  let best: { cmd: Command; rest: string[] } | null = null;
  for (const cmd of commands) {
    const words = cmd.name.split(' ');
    if (words.every((w, i) => argv[i] === w) && (!best || words.length > best.cmd.name.split(' ').length)) {
      best = { cmd, rest: argv.slice(words.length) };
    }
  }
  return best;
}

function parse(cmd: Command, rest: string[]): Record<string, string | boolean | undefined> | 'help' {
  const options: Record<string, { type: 'string' | 'boolean'; short?: string }> = {
    help: { type: 'boolean', short: 'h' },
  };
  for (const [name, o] of Object.entries(cmd.options)) options[name] = { type: o.type };
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({ args: rest, options, strict: true, allowPositionals: false }).values as typeof values;
  } catch (err) {
    const code = (err as { code?: string }).code ?? '';
    if (code.startsWith('ERR_PARSE_ARGS')) throw new UsageError((err as Error).message);
    throw err;
  }
  if (values.help) return 'help';
  for (const [name, o] of Object.entries(cmd.options)) {
    const v = values[name];
    if (o.required && v === undefined) throw new UsageError(`--${name} is required`);
    if (o.type === 'string' && typeof v === 'string' && v.trim() === '') {
      throw new UsageError(`--${name} must not be empty`);
    }
  }
  return values;
}

/** Messages for the failures an operator can act on; anything else is reported as is. */
function describeFailure(err: unknown, databaseUrl: string | null, fromDataDir: string[]): string {
  if (err instanceof ConfigError || err instanceof CliError) return err.message;
  const code = (err as { code?: string }).code;
  const source = origin('DATABASE_URL', fromDataDir);
  if (databaseUrl && (code === 'ECONNREFUSED' || code === 'CONNECT_TIMEOUT' || code === 'ENOTFOUND')) {
    return `cannot reach Postgres at ${redactUrl(databaseUrl)} (${source}): ${code}`;
  }
  if (code === '3D000' || code === '28P01' || code === '28000') {
    return `Postgres refused the connection (${source}): ${(err as Error).message}`;
  }
  return err instanceof Error ? err.message : String(err);
}

export async function main(argv: string[]): Promise<number> {
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help') {
    (argv.length === 0 ? process.stderr : process.stdout).write(overview());
    return argv.length === 0 ? 2 : 0;
  }
  const found = select(argv);
  if (!found) {
    const group = commands.filter((c) => c.name.startsWith(`${argv[0]} `));
    const wantsHelp = argv.includes('--help') || argv.includes('-h');
    if (group.length > 0 && (wantsHelp || argv.length === 1)) {
      const width = Math.max(...group.map((c) => c.name.length)) + 2;
      const out = group.map((c) => `  tern ${c.name.padEnd(width)}${c.summary}`).join('\n');
      (wantsHelp ? process.stdout : process.stderr).write(`Commands:\n${out}\n`);
      return wantsHelp ? 0 : 2;
    }
    process.stderr.write(`tern: unknown command "${argv.slice(0, 2).join(' ')}"\n\n${overview()}`);
    return 2;
  }
  const { cmd, rest } = found;
  const ctx = createContext();
  try {
    const values = parse(cmd, rest);
    if (values === 'help') {
      process.stdout.write(commandHelp(cmd));
      return 0;
    }
    const status = await cmd.run(values, ctx);
    return typeof status === 'number' ? status : 0;
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`tern ${cmd.name}: ${err.message}\nRun 'tern ${cmd.name} --help' for usage.\n`);
      return 2;
    }
    let databaseUrl: string | null = null;
    try {
      databaseUrl = ctx.config().databaseUrl;
    } catch {
      // the failure itself is the bad config
    }
    process.stderr.write(`tern ${cmd.name}: ${describeFailure(err, databaseUrl, ctx.fromDataDir)}\n`);
    return 1;
  } finally {
    // The command has reported its outcome; a connection that fails to close changes nothing the
    // operator can act on, and must not turn a success into a failure.
    await ctx.close().catch(() => {});
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`tern: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
