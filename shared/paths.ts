// Files that ship beside the code (sql/, shared/*.lua) are found from the package root, which is
// the same whether the code runs from source (tsx) or from dist/.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let root: string | null = null;

export function packageRoot(): string {
  if (root) return root;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'sql'))) return (root = dir);
    const up = dirname(dir);
    if (up === dir) throw new Error('cannot find the Tern package root (package.json beside sql/)');
    dir = up;
  }
}

export function fromRoot(...parts: string[]): string {
  return join(packageRoot(), ...parts);
}
