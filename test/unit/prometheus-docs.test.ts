// The Grafana dashboard (docs/grafana/tern.json) and the operations page against the metric
// families GET /metrics serves (shared/prom/families.ts): the dashboard is valid JSON, every
// family is in at least one panel's expression, no expression names a family that does not
// exist, and docs/operations.md has a row for every family.
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { allFamilyNames, RECORDED } from '../../shared/prom/families.js';
import { ROOT } from '../helpers/source-scan.js';

interface Panel {
  id: number;
  type: string;
  title: string;
  targets?: { expr: string; refId: string }[];
}

const dashboard = JSON.parse(readFileSync(path.join(ROOT, 'docs/grafana/tern.json'), 'utf8')) as {
  title: string;
  uid: string;
  panels: Panel[];
};
const panels = dashboard.panels.filter((p) => p.type !== 'row');
const expressions = panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
const families = allFamilyNames();

/** The family a series name in an expression belongs to (`…_bucket` → its histogram). */
function familyOf(series: string): string {
  if (families.includes(series)) return series;
  return series.replace(/_(bucket|sum|count)$/, '');
}

describe('Grafana dashboard docs/grafana/tern.json', () => {
  it('is a dashboard: a title, a uid, panels with unique ids, each non-row panel with a query', () => {
    expect(dashboard.title).to.equal('Tern');
    expect(dashboard.uid).to.be.a('string');
    const ids = dashboard.panels.map((p) => p.id);
    expect(new Set(ids).size).to.equal(ids.length);
    for (const p of panels) {
      expect(p.targets, p.title).to.be.an('array').that.is.not.empty;
      for (const t of p.targets!) expect(t.expr, p.title).to.be.a('string').and.match(/tern_/);
    }
  });

  it('uses every metric family in at least one panel', () => {
    const used = new Set(expressions.flatMap((e) => [...e.matchAll(/\btern_[a-z_]+/g)].map((m) => familyOf(m[0]))));
    expect(families.filter((f) => !used.has(f))).to.deep.equal([]);
  });

  it('names no series GET /metrics does not serve, and balances its brackets', () => {
    const histograms = Object.keys(RECORDED).filter((f) => RECORDED[f as keyof typeof RECORDED].type === 'histogram');
    for (const e of expressions) {
      for (const [series] of e.matchAll(/\btern_[a-z_]+/g)) {
        const family = familyOf(series);
        expect(families, `${series} in ${e}`).to.include(family);
        if (series !== family && !family.startsWith('tern_nodejs_gc')) expect(histograms, series).to.include(family);
      }
      for (const [open, close] of ['()', '{}', '[]']) {
        expect(e.split(open!).length, `${open}${close} in ${e}`).to.equal(e.split(close!).length);
      }
    }
  });
});

describe('docs/operations.md lists every metric family', () => {
  it('has a row per family in the families table', () => {
    const page = readFileSync(path.join(ROOT, 'docs/operations.md'), 'utf8');
    const rows = new Set([...page.matchAll(/^\| `(tern_[a-z_]+)` \|/gm)].map((m) => m[1]!));
    expect(families.filter((f) => !rows.has(f))).to.deep.equal([]);
    expect([...rows].filter((f) => !families.includes(f))).to.deep.equal([]);
  });
});
