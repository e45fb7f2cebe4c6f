// Child processes for the servers under load. Works from source (tsx) and from dist/: an entry
// is named without extension and resolved beside the running code.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { join, dirname } from 'node:path';

const here = dirname(fileURLToPath(import.meta.url));
const fromSource = import.meta.url.endsWith('.ts');

/** `relative` is from the code root (e.g. "api/http", "bench/servers/floor"). */
export function entry(relative: string): string {
  const file = join(here, '..', '..', `${relative}${fromSource ? '.ts' : '.js'}`);
  if (!existsSync(file)) throw new Error(`bench: cannot find ${file} (run "npm run build" first?)`);
  return file;
}

export async function freePort(): Promise<number> {
  const s = createServer();
  s.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => s.once('listening', resolve));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

export interface Child {
  port: number;
  url: string;
  /** The server's process id (bench/lib/measure.ts reads its CPU time). */
  pid?: number;
  stop(): Promise<void>;
}

/**
 * Tern's processes refuse to start without SECRET_KEY; every process of a bench run shares this
 * one (a secret of the operator's environment wins).
 */
export const BENCH_SECRET_KEY = 'tern-bench-secret-0123456789abcdefghijklmnop';
const childEnv = (env: Record<string, string>) => ({ SECRET_KEY: BENCH_SECRET_KEY, ...process.env, ...env });

// BENCH_NODE_ARGS reaches the children's node, servers and workers alike (e.g. "--cpu-prof
// --cpu-prof-dir=/tmp/prof" to profile Tern under load; NODE_OPTIONS refuses --cpu-prof).
const nodeArgs = () => (process.env.BENCH_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);

/** Spawns an entry; stop() sends SIGTERM, then SIGKILL after 10 s, and waits for the exit. */
function spawnEntry(relative: string, env: Record<string, string>): { child: ChildProcess; stop: () => Promise<void> } {
  const args = [...nodeArgs(), ...(fromSource ? ['--import', 'tsx'] : []), entry(relative)];
  const child: ChildProcess = spawn(process.execPath, args, {
    env: childEnv(env),
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    child,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Starts a server entry with PORT set, waits until it accepts connections. */
export async function startServer(relative: string, env: Record<string, string>): Promise<Child> {
  const port = await freePort();
  const { child, stop } = spawnEntry(relative, { ...env, PORT: String(port) });
  const deadline = Date.now() + 30_000;
  while (!(await accepts(port))) {
    if (child.exitCode !== null) throw new Error(`bench: ${relative} exited with ${child.exitCode}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`bench: ${relative} did not listen within 30 s`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { port, url: `http://127.0.0.1:${port}`, pid: child.pid!, stop };
}

/**
 * Starts a worker entry (one that prints "ready" on stdout once it consumes) with `env`. With
 * BENCH_CPU_PROF=<dir> set, the child writes a V8 CPU profile there when it exits.
 */
export async function startWorker(relative: string, env: Record<string, string>): Promise<Omit<Child, 'port' | 'url'>> {
  const prof = process.env.BENCH_CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', process.env.BENCH_CPU_PROF] : [];
  const args = [...nodeArgs(), ...prof, ...(fromSource ? ['--import', 'tsx'] : []), entry(relative)];
  const child: ChildProcess = spawn(process.execPath, args, {
    env: childEnv(env),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`bench: ${relative} not ready within 30 s`));
    }, 30_000);
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('ready\n')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`bench: ${relative} exited with ${code}`));
    });
  });
  child.stdout!.resume();
  return {
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

export function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/** Starts an entry that listens on no port (a worker). */
export function startProcess(relative: string, env: Record<string, string>): Omit<Child, 'port' | 'url'> {
  return { stop: spawnEntry(relative, env).stop };
}

/** A helper process that talks in lines: commands on its stdin, reports on its stdout. */
export interface LineChild {
  /** Called with every line the child prints. */
  onLine(listener: (line: string) => void): void;
  send(line: string): void;
  stop(): Promise<void>;
}

/**
 * Starts an entry that reads commands from stdin and prints lines; resolves once it printed
 * "ready" (a benchmark's sink or load generator, kept out of the process that measures).
 */
export async function startLineChild(relative: string, env: Record<string, string>): Promise<LineChild> {
  const args = [...nodeArgs(), ...(fromSource ? ['--import', 'tsx'] : []), entry(relative)];
  const child: ChildProcess = spawn(process.execPath, args, { env: childEnv(env), stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const listeners: ((line: string) => void)[] = [];
  let rest = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    const lines = (rest + chunk.toString()).split('\n');
    rest = lines.pop()!;
    for (const line of lines) for (const l of listeners) l(line);
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`bench: ${relative} not ready within 30 s`)), 30_000);
    listeners.push((line) => {
      if (line !== 'ready') return;
      clearTimeout(timer);
      resolve();
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`bench: ${relative} exited with ${code}`));
    });
  });
  return {
    onLine: (listener) => void listeners.push(listener),
    send: (line) => void child.stdin!.write(`${line}\n`),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
