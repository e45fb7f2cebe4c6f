// Tern's entry files run as child processes from source (through tsx), as the Procfile runs
// them, for tests that must see a process survive, stop or exit: the child's output is kept for
// the failure message, and a child the test did not stop is killed by the leak hook.
import { spawn, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { track } from './resources.js';
import { TEST_SECRET_KEY } from './stack.js';

export interface Proc {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
  /** Still running (not exited, not killed by a signal). */
  alive: () => boolean;
  kill: () => Promise<void>;
}

/** `netns`: run it in that network namespace (`ip netns exec`, which becomes the process itself). */
export function launch(entry: string, env: Record<string, string>, args: string[] = [], netns?: string): Proc {
  const node = [process.execPath, '--import', 'tsx', entry, ...args];
  const [command, ...rest] = netns ? ['ip', 'netns', 'exec', netns, ...node] : node;
  const child = spawn(command!, rest, {
    env: { ...process.env, LOG_LEVEL: 'info', SECRET_KEY: TEST_SECRET_KEY, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const alive = () => child.exitCode === null && child.signalCode === null;
  const kill = track(`process ${entry}`, async () => {
    if (alive()) {
      child.kill('SIGKILL');
      await exited;
    }
  });
  return { child, output: () => out, exited, alive, kill };
}

/** Whether something accepts TCP connections on the loopback port. */
export const accepts = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });
