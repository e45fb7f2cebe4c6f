// Running `npm start` (the development launcher) as a user would, from source through tsx: in
// this machine's network, or isolated in a network namespace of its own whose only interface is
// loopback (a machine where nothing answers on the Postgres and Redis ports). Commands the
// launcher prints are run as printed, in the same network namespace.
import { spawn, type ChildProcess } from 'node:child_process';
import { track } from './resources.js';
import { waitFor } from './wait.js';

export interface Launch {
  child: ChildProcess;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Kills the launcher if it still runs (the test failed half-way). */
  close: () => Promise<void>;
  /** Runs a shell line where the launcher runs (its folder and network namespace). */
  sh: (line: string) => Promise<{ code: number | null; out: string }>;
}

export interface LaunchOptions {
  /** The checkout to run (default: this one). */
  cwd?: string;
  /** In a network namespace of its own (needs root and `unshare`). */
  isolated?: boolean;
}

export function launch(env: Record<string, string>, opts: LaunchOptions = {}): Launch {
  const node = [process.execPath, '--import', 'tsx', 'api/cli/start.ts'];
  // `exec` keeps the launcher's pid, so that nsenter finds its namespace.
  const [cmd, ...args] = opts.isolated
    ? ['unshare', '-n', 'sh', '-c', `ip link set lo up && exec ${node.map((a) => `'${a}'`).join(' ')}`]
    : node;
  const fullEnv = { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', ...env };
  const child = spawn(cmd!, args, { cwd: opts.cwd, env: fullEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const close = track('npm start launcher', async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  });
  const sh = (line: string) =>
    new Promise<{ code: number | null; out: string }>((resolve, reject) => {
      const argv = opts.isolated ? ['nsenter', '-t', String(child.pid), '-n', 'sh', '-c', line] : ['sh', '-c', line];
      const p = spawn(argv[0]!, argv.slice(1), { cwd: opts.cwd, env: fullEnv, stdio: ['ignore', 'pipe', 'pipe'] });
      let text = '';
      p.stdout.on('data', (c: Buffer) => (text += c.toString()));
      p.stderr.on('data', (c: Buffer) => (text += c.toString()));
      p.once('error', reject);
      p.once('close', (code) => resolve({ code, out: text }));
    });
  return { child, output: () => out, exited, close, sh };
}

/** Resolves once the launcher printed `marker`; rejects if it exits first. */
export async function waitForOutput(l: Launch, marker: string, timeoutMs = 120_000): Promise<void> {
  let exited = false;
  void l.exited.then(() => (exited = true));
  await waitFor(
    `the launcher to print "${marker}"`,
    () => {
      if (exited) throw new Error(`launcher exited before "${marker}":\n${l.output()}`);
      return l.output().includes(marker);
    },
    { timeoutMs, intervalMs: 100 },
  );
}

/** The printed command line that follows the comment line `# <label>` of the banner. */
export function printedLine(output: string, label: string): string {
  const lines = output.split('\n');
  const at = lines.findIndex((l) => l.trim().startsWith(`# ${label}`));
  if (at < 0) throw new Error(`no "# ${label}" line in:\n${output}`);
  return lines[at + 1]!.trim();
}

/** GET through the launcher's network: status, headers and body text. */
export async function httpGet(l: Launch, url: string, token: string) {
  const script =
    `fetch(${JSON.stringify(url)},{headers:{authorization:'Bearer ${token}'}})` +
    '.then(async r=>process.stdout.write(JSON.stringify({status:r.status,headers:Object.fromEntries(r.headers),body:await r.text()})))';
  const r = await l.sh(`node -e "${script.replace(/"/g, '\\"')}"`);
  return JSON.parse(r.out) as { status: number; headers: Record<string, string>; body: string };
}

/** Polls GET /emails/{id} until every recipient reached `status`; returns the email. */
export async function waitForRecipients(l: Launch, api: string, token: string, id: string, status: string) {
  return await waitFor(
    `every recipient of ${id} to be ${status}`,
    async () => {
      const r = await httpGet(l, `${api}/emails/${id}`, token);
      const email = JSON.parse(r.body) as { raw_url: string; recipients: { status: string }[] };
      return email.recipients?.every((x) => x.status === status) && email;
    },
    { timeoutMs: 30_000, intervalMs: 300 },
  );
}
