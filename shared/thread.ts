// A worker thread running one of Tern's modules, from the built JavaScript or, in the tests, from
// the TypeScript source: a worker thread does not inherit the parent's loader, so from source the
// thread registers tsx itself before it imports the module.
import { Worker, type WorkerOptions } from 'node:worker_threads';

/**
 * A new thread running the module `name` (without extension) beside the module whose
 * `import.meta.url` is `base`.
 */
export function newThread(base: string, name: string, options: WorkerOptions): Worker {
  if (!base.endsWith('.ts')) return new Worker(new URL(`./${name}.js`, base), options);
  const entry = new URL(`./${name}.ts`, base).href;
  const code = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(entry)}); })`;
  return new Worker(code, { ...options, eval: true });
}
