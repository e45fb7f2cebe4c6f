// The Procfile's processes under one launcher: each spawned with the operator's environment,
// its output prefixed with its name. Run from dist/ (npm start) the Procfile's commands run as
// written; run from source through tsx (tests, development) each `dist/<x>.js` becomes
// `--import tsx <x>.ts`, so a fresh clone needs no build for that.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';

export interface ProcEntry {
  name: string;
  /** Arguments for `node` (the Procfile's command without its leading `node`). */
  args: string[];
  /** The entry file, relative to the package root. */
  file: string;
}

/** Reads the Procfile; `release` (migrations) is the launcher's own job and is left out. */
export async function readProcfile(root: string, fromSource: boolean): Promise<ProcEntry[]> {
  const text = await readFile(`${root}/Procfile`, 'utf8');
  const entries: ProcEntry[] = [];
  for (const raw of text.split('\n')) {
    const m = /^([a-z][a-z0-9_-]*):\s*(.+)$/.exec(raw.trim());
    if (!m || m[1] === 'release') continue;
    const words = m[2]!.split(/\s+/);
    if (words[0] !== 'node') throw new Error(`Procfile: ${m[1]}: only "node …" commands are supported`);
    let args = words.slice(1);
    const jsIndex = args.findIndex((a) => /^dist\/.+\.js$/.test(a));
    if (jsIndex < 0) throw new Error(`Procfile: ${m[1]}: no dist/…js entry file`);
    if (fromSource) {
      const ts = args[jsIndex]!.replace(/^dist\//, '').replace(/\.js$/, '.ts');
      args = [...args.slice(0, jsIndex), '--import', 'tsx', ts, ...args.slice(jsIndex + 1)];
    }
    const file = fromSource ? args[jsIndex + 2]! : args[jsIndex]!;
    entries.push({ name: m[1]!, args, file });
  }
  return entries;
}

type Say = (line: string) => void;

/** Starts the processes and watches them; any unexpected exit stops the whole group. */
export class Supervisor {
  private readonly children = new Map<string, ChildProcess>();
  private readonly exits: Promise<void>[] = [];
  private stopping = false;
  /** Set when a child did not stop cleanly during shutdown. */
  failed = false;

  constructor(
    private readonly root: string,
    private readonly env: Record<string, string | undefined>,
    private readonly say: Say,
    private readonly onUnexpectedExit: (name: string, how: string) => void,
  ) {}

  start(entries: ProcEntry[]): string[] {
    const width = Math.max(...entries.map((e) => e.name.length), 4);
    const started: string[] = [];
    for (const e of entries) {
      if (!existsSync(`${this.root}/${e.file}`)) {
        this.say(`${e.name}: skipped (${e.file} does not exist yet)`);
        continue;
      }
      // Own process group: a terminal's Ctrl-C reaches only the launcher, which then stops the
      // children once, in order (two signals would force their exit).
      const child = spawn(process.execPath, e.args, {
        cwd: this.root,
        env: this.env,
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
      const prefix = `${e.name.padEnd(width)} | `;
      for (const stream of [child.stdout, child.stderr]) {
        createInterface({ input: stream }).on('line', (line) => process.stdout.write(`${prefix}${line}\n`));
      }
      this.exits.push(
        new Promise((resolve) => {
          child.once('exit', (code, signal) => {
            this.children.delete(e.name);
            const clean = code === 0 || (this.stopping && signal === 'SIGTERM');
            if (this.stopping && !clean) this.failed = true;
            if (!this.stopping) this.onUnexpectedExit(e.name, signal ? `signal ${signal}` : `code ${code}`);
            resolve();
          });
        }),
      );
      child.once('error', (err) => this.say(`${e.name}: cannot start: ${err.message}`));
      this.children.set(e.name, child);
      started.push(e.name);
    }
    return started;
  }

  /** First stage: SIGTERM to every child, then wait for all of them to exit. */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const child of this.children.values()) child.kill('SIGTERM');
    await Promise.all(this.exits);
  }

  /** Second stage (or the launcher itself exiting): no waiting. */
  kill(): void {
    this.stopping = true;
    for (const child of this.children.values()) child.kill('SIGKILL');
  }
}
