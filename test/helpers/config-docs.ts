// docs/configuration.md's tables come from shared/config.ts (configTables): each sits between
// `<!-- config:<section> … -->` and `<!-- /config:<section> -->`. `npm run docs:config` rewrites
// them; test/unit/docs.test.ts fails when the page and the table differ.
import { readFileSync, writeFileSync } from 'node:fs';
import { configTables } from '../../shared/config.js';
import { ROOT } from './source-scan.js';

export const CONFIG_DOC = `${ROOT}/docs/configuration.md`;

/** The page with every generated table replaced by what shared/config.ts says now. */
export function renderConfigDoc(page: string): string {
  const tables = configTables();
  return page.replace(
    /(<!-- config:(\w+) [^\n]*-->\n)[\s\S]*?(\n<!-- \/config:\2 -->)/g,
    (_all, open: string, section: string, close: string) => {
      const table = tables[section as keyof typeof tables];
      if (table === undefined) throw new Error(`docs/configuration.md: no section "${section}" in shared/config.ts`);
      return `${open}${table}${close}`;
    },
  );
}

if (import.meta.filename === process.argv[1]) {
  writeFileSync(CONFIG_DOC, renderConfigDoc(readFileSync(CONFIG_DOC, 'utf8')));
  console.log('docs/configuration.md: tables rewritten from shared/config.ts');
}
