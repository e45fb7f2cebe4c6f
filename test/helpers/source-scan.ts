// Reads the project's own TypeScript sources for the docs tests: the stable `event` codes of its
// log lines. Parsed with the TypeScript compiler (syntax only, no type check), so a code written
// as `event: cond ? 'A' : 'B'` or passed to a helper's `event` parameter is found as well.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

export const ROOT = path.resolve(import.meta.dirname, '../..');

/** A log event code: upper-case words joined by underscores (e.g. WEBHOOK_DELIVERY_FAILED). */
const CODE = /^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$/;

export function sourceFiles(dirs: string[]): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) out.push(p);
    }
  };
  for (const d of dirs) walk(path.join(ROOT, d));
  return out.sort();
}

function literals(node: ts.Node, into: string[]): void {
  if (ts.isStringLiteralLike(node)) {
    if (CODE.test(node.text)) into.push(node.text);
    return;
  }
  node.forEachChild((child) => literals(child, into));
}

/**
 * Index of the parameter named `event` of each function declared in the file (only the exported
 * ones with `exported`), by function name.
 */
function eventParameters(file: ts.SourceFile, exported = false): Map<string, number> {
  const found = new Map<string, number>();
  const visit = (node: ts.Node): void => {
    const isExported = (n: ts.FunctionDeclaration) => (ts.getCombinedModifierFlags(n) & ts.ModifierFlags.Export) !== 0;
    if (ts.isFunctionDeclaration(node) && node.name && (!exported || isExported(node))) {
      const i = node.parameters.findIndex((p) => ts.isIdentifier(p.name) && p.name.text === 'event');
      if (i >= 0) found.set(node.name.text, i);
    }
    node.forEachChild(visit);
  };
  visit(file);
  return found;
}

function parse(file: string): ts.SourceFile {
  return ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
}

/**
 * Every log event code of one file. `helpers`: functions declared elsewhere whose parameter at
 * that index is named `event` (a shared helper such as workers/worker-errors.ts); the file's own
 * are found in it.
 */
export function eventCodes(file: string, helpers: Map<string, number> = new Map()): string[] {
  const source = parse(file);
  const params = new Map([...helpers, ...eventParameters(source)]);
  const codes: string[] = [];
  const visit = (node: ts.Node): void => {
    // { event: 'X' } and { event: cond ? 'X' : 'Y' }
    if (ts.isPropertyAssignment(node) && ts.isIdentifier(node.name) && node.name.text === 'event') {
      literals(node.initializer, codes);
    }
    // helper(deps, 'X', …) where the helper's parameter at that place is named `event`
    if (ts.isCallExpression(node) && ts.isIdentifier(node.expression)) {
      const i = params.get(node.expression.text);
      const arg = i === undefined ? undefined : node.arguments[i];
      if (arg) literals(arg, codes);
    }
    node.forEachChild(visit);
  };
  visit(source);
  return codes;
}

/** Code → the files (relative to the root) that log it. */
export function allEventCodes(dirs = ['api', 'shared', 'workers']): Map<string, string[]> {
  const map = new Map<string, string[]>();
  const files = sourceFiles(dirs);
  const helpers = new Map<string, number>();
  for (const file of files) {
    // Only exported helpers are called from other files.
    for (const [name, i] of eventParameters(parse(file), true)) helpers.set(name, i);
  }
  for (const file of files) {
    for (const code of eventCodes(file, helpers)) {
      const rel = path.relative(ROOT, file);
      const files = map.get(code) ?? [];
      if (!files.includes(rel)) files.push(rel);
      map.set(code, files);
    }
  }
  return map;
}
