// The fault suite's last line of cleanup: a detached process that waits for the run's process to
// end and, when it ended without cleaning up (killed with SIGKILL, out of memory), stops what the
// run recorded in its state file (bench/lib/cleanup.ts): processes, each only while it is still
// the same process (its start time matches), private Postgres clusters (`pg_ctl -m immediate
// stop`) and folders. A run that cleans up itself deletes the state file and stops the reaper.
//   node reaper.js <run pid> <state file>
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';

export type ReapItem =
  | { kill: number; start: string }
  | { pg: { bin: string; data: string; uid: number | null; gid: number | null } }
  | { rm: string };

/** The start time of a process (field 22 of /proc/<pid>/stat), null when it is gone. */
export function startTimeOf(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

export function reap(items: ReapItem[]): void {
  for (const item of items) {
    if ('kill' in item && startTimeOf(item.kill) === item.start) {
      try {
        process.kill(item.kill, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
  }
  for (const item of items) {
    if (!('pg' in item)) continue;
    const { bin, data, uid, gid } = item.pg;
    if (!existsSync(`${data}/postmaster.pid`)) continue;
    try {
      execFileSync(bin, ['-D', data, '-m', 'immediate', '-w', 'stop'], {
        ...(uid !== null && gid !== null ? { uid, gid } : {}),
        stdio: 'ignore',
        timeout: 60_000,
      });
    } catch {
      // already stopped
    }
  }
  for (const item of items) if ('rm' in item) rmSync(item.rm, { recursive: true, force: true });
}

function readState(file: string): ReapItem[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as ReapItem);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as { code?: string }).code === 'EPERM';
  }
}

if (process.argv[1]?.match(/reaper\.(js|ts)$/)) {
  const parent = Number(process.argv[2]);
  const file = process.argv[3]!;
  const timer = setInterval(() => {
    if (alive(parent)) return;
    clearInterval(timer);
    reap(readState(file));
    rmSync(file, { force: true });
  }, 1000);
  process.on('SIGTERM', () => process.exit(0));
}
