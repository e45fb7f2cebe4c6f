// The documents against the code: every log event code the code logs is in the one table of
// docs/operations.md (and every row there is still logged), every environment variable read is in
// docs/configuration.md, and every link between the pages (files and #anchors) resolves.
import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { CONFIG_VARIABLES, loadConfig } from '../../shared/config.js';
import { renderConfigDoc } from '../helpers/config-docs.js';
import { allEventCodes, ROOT, sourceFiles } from '../helpers/source-scan.js';

const read = (rel: string): string => readFileSync(path.join(ROOT, rel), 'utf8');

/** The text of a page's `## heading` section, up to the next heading of the same or a higher level. */
function section(markdown: string, heading: string): string {
  const start = markdown.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`no section "${heading}"`);
  const level = heading.indexOf(' ');
  const rest = markdown.slice(start + heading.length + 2);
  const end = rest.search(new RegExp(`^#{1,${level}} `, 'm'));
  return end < 0 ? rest : rest.slice(0, end);
}

/** The back-quoted names in the first column of the tables of `markdown`. */
function firstColumnNames(markdown: string): Set<string> {
  const names = new Set<string>();
  for (const line of markdown.split('\n')) {
    const m = /^\|([^|]*)\|/.exec(line);
    if (!m) continue;
    for (const code of m[1]!.matchAll(/`([A-Z][A-Z0-9_]*)`/g)) names.add(code[1]!);
  }
  return names;
}

describe('docs', () => {
  describe('log event codes (docs/operations.md)', () => {
    const used = allEventCodes();
    const documented = firstColumnNames(section(read('docs/operations.md'), '## Log event codes'));

    it('finds the codes the code logs (the scanner works)', () => {
      // Forms the scanner must see: a literal, a conditional, and a helper's `event` parameter.
      expect(used.get('HTTP_INTERNAL_ERROR')).to.deep.equal(['api/middleware/errors.ts']);
      expect(used.has('ORG_SENDING_RESUMED')).to.equal(true);
      expect(used.has('RELAY_DATA_FAILED')).to.equal(true);
      // A helper of another file (workers/worker-errors.ts) called with the code.
      expect(used.get('DELIVERY_WORKER_ERROR')).to.deep.equal(['workers/delivery.ts']);
      expect(used.size).to.be.greaterThan(50);
    });

    it('lists every code used in the code', () => {
      const missing = [...used.keys()]
        .filter((c) => !documented.has(c))
        .map((c) => `${c} (${used.get(c)!.join(', ')})`);
      expect(missing, 'add a row to the table in docs/operations.md').to.deep.equal([]);
    });

    it('lists no code that the code no longer logs', () => {
      const stale = [...documented].filter((c) => !used.has(c));
      expect(stale, 'remove these rows from docs/operations.md').to.deep.equal([]);
    });

    it('every warn, error and fatal log line carries an event code', () => {
      const offenders: string[] = [];
      for (const file of sourceFiles(['api', 'shared', 'workers'])) {
        const src = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
        const visit = (node: ts.Node): void => {
          if (
            ts.isCallExpression(node) &&
            ts.isPropertyAccessExpression(node.expression) &&
            ['warn', 'error', 'fatal'].includes(node.expression.name.text) &&
            /\blog(ger)?$/.test(node.expression.expression.getText(src))
          ) {
            const first = node.arguments[0];
            const hasEvent =
              first !== undefined &&
              ts.isObjectLiteralExpression(first) &&
              first.properties.some((p) => p.name !== undefined && p.name.getText(src) === 'event');
            if (!hasEvent) {
              const line = src.getLineAndCharacterOfPosition(node.getStart(src)).line + 1;
              offenders.push(`${path.relative(ROOT, file)}:${line}`);
            }
          }
          node.forEachChild(visit);
        };
        visit(src);
      }
      expect(offenders).to.deep.equal([]);
    });
  });

  describe('environment variables (docs/configuration.md)', () => {
    const documented = firstColumnNames(read('docs/configuration.md'));

    it('CONFIG_VARIABLES holds every variable loadConfig reads', () => {
      const seen = new Set<string>();
      const recorder = (base: Record<string, string>) =>
        new Proxy(base, {
          get(target, name) {
            if (typeof name === 'string') seen.add(name);
            return target[name as string];
          },
        });
      // Defaults, then every optional branch taken (TLS files, SMTPS port, intake secret).
      loadConfig(recorder({ SECRET_KEY: 'y'.repeat(32) }));
      loadConfig(
        recorder({
          RELAY_TLS_CERT: '/c.pem',
          RELAY_TLS_KEY: '/k.pem',
          RELAY_TLS_PORT: '2465',
          INBOUND_SECRET: 'x'.repeat(24),
          SECRET_KEY: 'y'.repeat(32),
        }),
      );
      // Names passed to the parsing helpers as literals, whatever branch reads them.
      const source = read('shared/config.ts').split('export const CONFIG_VARIABLES')[0]!;
      for (const m of source.matchAll(/\benv(?:, |\.)'?([A-Z][A-Z0-9_]+)'?/g)) seen.add(m[1]!);
      // Set by systemd (StateDirectory=), not by the operator: DELIVERY_JOURNAL_DIR's default.
      seen.delete('STATE_DIRECTORY');
      const listed = new Set<string>(CONFIG_VARIABLES);
      expect([...seen].filter((v) => !listed.has(v))).to.deep.equal([]);
      expect(
        [...listed].filter((v) => !seen.has(v)),
        'listed but never read',
      ).to.deep.equal([]);
    });

    it("shows shared/config.ts's table: docs/configuration.md's tables are generated (npm run docs:config)", () => {
      const page = read('docs/configuration.md');
      const rendered = renderConfigDoc(page);
      const first = page.split('\n').findIndex((line, i) => line !== rendered.split('\n')[i]);
      expect(
        first,
        `docs/configuration.md differs from shared/config.ts from line ${first + 1}; run npm run docs:config`,
      ).to.equal(-1);
    });

    it('documents every variable of the config module', () => {
      expect(CONFIG_VARIABLES.filter((v) => !documented.has(v))).to.deep.equal([]);
    });

    it('documents every variable read directly from process.env', () => {
      const read = new Set<string>();
      for (const file of sourceFiles(['api', 'shared', 'workers'])) {
        for (const m of readFileSync(file, 'utf8').matchAll(/process\.env\.([A-Z][A-Z0-9_]*)/g)) read.add(m[1]!);
      }
      read.delete('PATH');
      expect([...read].filter((v) => !documented.has(v))).to.deep.equal([]);
    });
  });

  describe('links between the pages', () => {
    const pages = ['README.md', ...markdownUnder('docs')];

    it('every relative link names a file that exists, and an anchor that its headings make', () => {
      const broken: string[] = [];
      for (const page of pages) {
        for (const target of relativeLinks(read(page))) {
          const [file, anchor] = target.split('#') as [string, string | undefined];
          const resolved = file === '' ? page : path.normalize(path.join(path.dirname(page), decodeURI(file)));
          if (!existsSync(path.join(ROOT, resolved))) {
            broken.push(`${page}: ${target} (no file ${resolved})`);
            continue;
          }
          if (anchor && resolved.endsWith('.md') && !anchors(read(resolved)).has(anchor)) {
            broken.push(`${page}: ${target} (no heading #${anchor} in ${resolved})`);
          }
        }
      }
      expect(broken).to.deep.equal([]);
    });

    it('the checker sees what GitHub makes of headings', () => {
      expect([...anchors('# A b\n## Send: `POST /emails`\n## A b\n```\n# not a heading\n```\n')]).to.deep.equal([
        'a-b',
        'send-post-emails',
        'a-b-1',
      ]);
      expect(relativeLinks('[a](x.md#y) [b](https://e.com) `[c](no.md)` [d](#z) [e](/docs/api)')).to.deep.equal([
        'x.md#y',
        '#z',
      ]);
    });
  });
});

function markdownUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...markdownUnder(rel));
    else if (entry.name.endsWith('.md')) out.push(rel);
  }
  return out.sort();
}

/** Markdown with fenced blocks and code spans blanked out. */
function prose(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
}

/** Link targets that point into this repository (not a URL, not a path on a running install). */
function relativeLinks(markdown: string): string[] {
  const out: string[] = [];
  for (const m of prose(markdown).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    const target = m[1]!;
    if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('/')) continue;
    out.push(target);
  }
  return out;
}

/** The anchors GitHub gives the page's headings (duplicates get -1, -2, …). */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  const text = markdown.replace(/^```[\s\S]*?^```/gm, '');
  for (const m of text.matchAll(/^#{1,6}\s+(.+?)\s*#*$/gm)) {
    const slug = m[1]!
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}
