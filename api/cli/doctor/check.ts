// What `tern doctor` reports (DESIGN §15): one line per check, `ok`, `warn` or `fail`, with one
// line saying how to fix it. Exit status: 0 all ok, 1 warnings, 2 failures.

export type Status = 'ok' | 'warn' | 'fail';

export interface Check {
  name: string;
  status: Status;
  message: string;
  /** How to fix it, one line; null when ok. */
  fix: string | null;
}

export const ok = (name: string, message: string): Check => ({ name, status: 'ok', message, fix: null });
export const warn = (name: string, message: string, fix: string): Check => ({ name, status: 'warn', message, fix });
export const fail = (name: string, message: string, fix: string): Check => ({ name, status: 'fail', message, fix });

export function exitStatus(checks: Check[]): 0 | 1 | 2 {
  if (checks.some((c) => c.status === 'fail')) return 2;
  return checks.some((c) => c.status === 'warn') ? 1 : 0;
}

/** Runs a group of checks; an error it did not expect becomes one failed check naming it. */
export async function guarded(name: string, fix: string, run: () => Promise<Check[]>): Promise<Check[]> {
  try {
    return await run();
  } catch (err) {
    return [fail(name, `could not check: ${(err as Error).message ?? String(err)}`, fix)];
  }
}

/** The human report: a line per check, its fix under it, then the totals. */
export function render(checks: Check[]): string {
  const width = Math.min(Math.max(...checks.map((c) => c.name.length), 10), 44);
  const lines: string[] = [];
  for (const c of checks) {
    const tag = c.status === 'ok' ? 'ok  ' : c.status === 'warn' ? 'WARN' : 'FAIL';
    lines.push(`${tag}  ${c.name.padEnd(width)}  ${c.message}`);
    if (c.fix) lines.push(`      ${' '.repeat(width)}  fix: ${c.fix}`);
  }
  const n = (s: Status) => checks.filter((c) => c.status === s).length;
  lines.push('', `${n('ok')} ok, ${n('warn')} warnings, ${n('fail')} failures`);
  return lines.join('\n');
}
