// Charts as inline SVG made on the server: no script, no framework, nothing loaded from elsewhere.
// Each is a <figure> whose <svg role="img"> carries a <title> and a <desc> for screen readers, a
// legend in words, and its numbers as a table in a <details> under it (a click away, and what a
// screen reader or a browser without SVG reads). Colours come from the stylesheet (light and dark).
import type { SeriesRow } from '../../shared/metrics/report.js';
import { html, type Safe } from './html.js';
import { dataTable } from './ui.js';

/** The two drawings of every chart: wide for a desktop, narrow for a phone (CSS shows one). */
const WIDTHS = [
  [760, 'wide'],
  [360, 'narrow'],
] as const;
const PAD_TOP = 10;
const PAD_BOTTOM = 22;
const PAD_RIGHT = 6;
/** Width of one digit of an axis label (11 px text), for a left gutter that fits its labels. */
const DIGIT_W = 7;

/** One layer of a stacked bar, or one line of a line chart. */
export interface Layer<R> {
  cls: string;
  label: string;
  value: (r: R) => number;
}

/** The day's counts the stacks show: what became of the day's sent mail. */
export const DAY_STACK: Layer<SeriesRow>[] = [
  { cls: 'delivered', label: 'delivered', value: (r) => Number(r.delivered) },
  { cls: 'bounced', label: 'bounced', value: (r) => Number(r.bouncedHard) + Number(r.bouncedSoft) },
  {
    cls: 'waiting',
    label: 'sent, no outcome yet',
    value: (r) => Math.max(0, Number(r.sent) - Number(r.delivered) - Number(r.bouncedHard) - Number(r.bouncedSoft)),
  },
];

/** A round upper bound for an axis (1, 2 or 5 times a power of ten) at or above `max`. */
export function niceMax(max: number): number {
  if (max <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(max));
  for (const m of [1, 2, 5, 10]) if (m * p >= max) return m * p;
  return 10 * p;
}

function fmt(n: number, unit: '' | '%'): string {
  return unit === '%' ? `${Number(n.toFixed(2))}%` : n.toLocaleString('en');
}

/** `2026-11-03` → `3 Nov` (the axis labels; the tables keep the full date). */
function shortDay(day: string): string {
  const d = new Date(`${day}T00:00:00Z`);
  return `${d.getUTCDate()} ${d.toLocaleString('en', { month: 'short', timeZone: 'UTC' })}`;
}

interface Frame {
  height: number;
  top: number;
  unit: '' | '%';
  /** Horizontal dashed lines with a label (thresholds). */
  marks?: { value: number; label: string }[];
}

/** The axes of a chart over days: gridlines with their values on the left, a few days below. */
function axes(W: number, days: string[], f: Frame): { svg: Safe; x0: number; plotW: number; y: (v: number) => number } {
  const labels = [f.top, f.top / 2, 0].map((v) => fmt(v, f.unit));
  const x0 = 6 + DIGIT_W * Math.max(...labels.map((l) => l.length));
  const plotW = W - x0 - PAD_RIGHT;
  const plotH = f.height - PAD_TOP - PAD_BOTTOM;
  const y = (v: number) => PAD_TOP + plotH - (Math.min(v, f.top) / f.top) * plotH;
  const grid = [f.top, f.top / 2, 0].map(
    (v, i) =>
      html`<line class="grid" x1="${x0}" x2="${W - PAD_RIGHT}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" />
        <text x="${x0 - 4}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end">${labels[i]!}</text>`,
  );
  const marks = (f.marks ?? []).map(
    (m) =>
      html`<line
          class="mark"
          x1="${x0}"
          x2="${W - PAD_RIGHT}"
          y1="${y(m.value).toFixed(1)}"
          y2="${y(m.value).toFixed(1)}"
        />
        <text class="mark" x="${W - PAD_RIGHT - 2}" y="${(y(m.value) - 3).toFixed(1)}" text-anchor="end"
          >${m.label}</text
        >`,
  );
  const slot = plotW / Math.max(1, days.length);
  const ticks = days.length > 1 ? [0, Math.floor((days.length - 1) / 2), days.length - 1] : days.length ? [0] : [];
  const dayLabels = ticks.map((i, n) => {
    const anchor = n === 0 ? 'start' : n === ticks.length - 1 ? 'end' : 'middle';
    const x = n === 0 ? x0 : n === ticks.length - 1 ? W - PAD_RIGHT : x0 + (i + 0.5) * slot;
    return html`<text x="${x.toFixed(1)}" y="${f.height - 6}" text-anchor="${anchor}">${shortDay(days[i]!)}</text>`;
  });
  return { svg: html`${grid}${marks}${dayLabels}`, x0, plotW, y };
}

function legend<R>(layers: Layer<R>[], extra: Safe | string = ''): Safe {
  return html`<p class="legend" aria-hidden="true">
    ${layers.map((l) => html`<span><i class="sw ${l.cls}"></i>${l.label}</span>`)}${extra}
  </p>`;
}

/** The figure around a chart: the SVG, its legend and its numbers a click away. */
function figure(o: {
  id: string;
  title: string;
  desc: string;
  height: number;
  body: (width: number) => Safe;
  legend: Safe;
  table: Safe;
}): Safe {
  const svgs = WIDTHS.map(([w, cls]) => {
    const id = `${o.id}-${cls}`;
    return html`<svg
      class="chart ${cls}"
      role="img"
      aria-labelledby="${id}-title ${id}-desc"
      viewBox="0 0 ${w} ${o.height}"
      width="100%"
    >
      <title id="${id}-title">${o.title}</title>
      <desc id="${id}-desc">${o.desc}</desc>
      ${o.body(w)}
    </svg>`;
  });
  return html`<figure class="chart-figure" data-chart="${o.id}">
    ${svgs} ${o.legend}
    <details class="chart-numbers">
      <summary>${o.title}: the numbers</summary>
      ${o.table}
    </details>
  </figure>`;
}

/** A table of the chart's rows: a first column, then one per layer. */
function numbersTable<R>(
  attr: ((r: R) => Safe) | undefined,
  title: string,
  first: string,
  rows: R[],
  name: (r: R) => string,
  layers: Layer<R>[],
  unit: '' | '%',
): Safe {
  return dataTable(
    [first, ...layers.map((l) => ({ label: l.label, num: true }))],
    rows.map(
      (r) =>
        html`<tr ${attr?.(r) ?? ''}>
          <td class="nowrap">${name(r)}</td>
          ${layers.map((l) => html`<td class="num">${fmt(l.value(r), unit)}</td>`)}
        </tr>`,
    ),
    { label: title, scroll: true },
  );
}

/**
 * Per day, a bar whose layers stack (delivered, bounced, no outcome yet: together the day's sent
 * mail), over gridlines at round values.
 */
export function stackedDayChart(
  series: SeriesRow[],
  o: { id: string; title: string; height?: number; layers?: Layer<SeriesRow>[] },
): Safe {
  const layers = o.layers ?? DAY_STACK;
  const height = o.height ?? 220;
  const totals = series.map((r) => layers.reduce((s, l) => s + l.value(r), 0));
  const top = niceMax(Math.max(0, ...totals));
  const body = (W: number) => {
    const a = axes(
      W,
      series.map((r) => r.day),
      { height, top, unit: '' },
    );
    const slot = a.plotW / Math.max(1, series.length);
    const barW = Math.max(1, slot * 0.72);
    const bars = series.flatMap((r, i) => {
      let base = 0;
      const x = a.x0 + i * slot + (slot - barW) / 2;
      return layers.map((l) => {
        const v = l.value(r);
        if (v <= 0) return html``;
        const y1 = a.y(base + v);
        const y0 = a.y(base);
        base += v;
        return html`<rect
          class="${l.cls}"
          x="${x.toFixed(1)}"
          y="${y1.toFixed(1)}"
          width="${barW.toFixed(1)}"
          height="${Math.max(0.5, y0 - y1).toFixed(1)}"
          ><title>${r.day}: ${fmt(v, '')} ${l.label}</title></rect
        >`;
      });
    });
    return html`${a.svg}${bars}`;
  };
  const sum = (l: Layer<SeriesRow>) => series.reduce((s, r) => s + l.value(r), 0);
  const first = series[0]?.day ?? '';
  const last = series.at(-1)?.day ?? '';
  const desc =
    `Per day from ${first} to ${last} (UTC), stacked: ` +
    layers.map((l) => `${l.label} ${fmt(sum(l), '')}`).join(', ') +
    `. The busiest day had ${fmt(Math.max(0, ...totals), '')}.`;
  return figure({
    id: o.id,
    title: o.title,
    desc,
    height,
    body,
    legend: legend(layers),
    table: numbersTable(undefined, o.title, 'Day (UTC)', [...series].reverse(), (r) => r.day, layers, ''),
  });
}

/**
 * Per day, one line per rate (percent), against dashed lines at the thresholds that pause
 * sending (the organization's alert rules).
 */
export function rateChart(
  series: SeriesRow[],
  o: { id: string; title: string; lines: Layer<SeriesRow>[]; marks: { value: number; label: string }[] },
): Safe {
  const height = 200;
  const values = series.flatMap((r) => o.lines.map((l) => l.value(r)));
  const top = niceMax(Math.max(1, ...values, ...o.marks.map((m) => m.value * 1.15)));
  const body = (W: number) => {
    const a = axes(
      W,
      series.map((r) => r.day),
      { height, top, unit: '%', marks: o.marks },
    );
    const slot = a.plotW / Math.max(1, series.length);
    const lines = o.lines.map((l) => {
      const pts = series.map((r, i) => `${(a.x0 + (i + 0.5) * slot).toFixed(1)},${a.y(l.value(r)).toFixed(1)}`);
      return html`<polyline class="line ${l.cls}" points="${pts.join(' ')}" />`;
    });
    return html`${a.svg}${lines}`;
  };
  const worst = o.lines.map((l) => `${l.label} at most ${fmt(Math.max(0, ...series.map(l.value)), '%')}`);
  const desc =
    `Per day from ${series[0]?.day ?? ''} to ${series.at(-1)?.day ?? ''} (UTC): ${worst.join(', ')}.` +
    (o.marks.length
      ? ` Thresholds: ${o.marks.map((m) => `${m.label}`).join(', ')}.`
      : ' No alert rule pauses sending.');
  return figure({
    id: o.id,
    title: o.title,
    desc,
    height,
    body,
    legend: legend(
      o.lines,
      o.marks.length ? html`<span><i class="sw mark-sw"></i>threshold that pauses sending</span>` : '',
    ),
    table: numbersTable(undefined, o.title, 'Day (UTC)', [...series].reverse(), (r) => r.day, o.lines, '%'),
  });
}

/** One bar per entry (a domain, a provider, a stream), its layers side by side along the bar. */
export function breakdownChart<R extends { label: string }>(
  rows: R[],
  o: { id: string; title: string; first: string; layers: Layer<R>[]; attr?: (r: R) => Safe },
): Safe {
  const row = 26;
  const height = PAD_TOP + rows.length * row + 4;
  const totals = rows.map((r) => o.layers.reduce((s, l) => s + l.value(r), 0));
  const top = niceMax(Math.max(0, ...totals));
  const body = (W: number) => {
    const narrow = W < 500;
    const x0 = narrow ? 110 : 170;
    const plotW = W - x0 - PAD_RIGHT - 50;
    const max = narrow ? 15 : 24;
    const bars = rows.flatMap((r, i) => {
      let base = 0;
      const y = PAD_TOP + i * row;
      const label = r.label.length > max ? `${r.label.slice(0, max - 1)}…` : r.label;
      const parts = o.layers.map((l) => {
        const v = l.value(r);
        if (v <= 0) return html``;
        const x = x0 + (base / top) * plotW;
        base += v;
        return html`<rect
          class="${l.cls}"
          x="${x.toFixed(1)}"
          y="${y + 4}"
          width="${Math.max(0.5, (v / top) * plotW).toFixed(1)}"
          height="${row - 10}"
          ><title>${r.label}: ${fmt(v, '')} ${l.label}</title></rect
        >`;
      });
      return [
        html`<text x="${x0 - 6}" y="${y + row / 2 + 3}" text-anchor="end">${label}</text>`,
        ...parts,
        html`<text x="${(x0 + (base / top) * plotW + 4).toFixed(1)}" y="${y + row / 2 + 3}"
          >${fmt(totals[i]!, '')}</text
        >`,
      ];
    });
    return html`${bars}`;
  };
  const desc =
    rows
      .slice(0, 10)
      .map(
        (r, i) =>
          `${r.label}: ${fmt(totals[i]!, '')} (${o.layers.map((l) => `${l.label} ${fmt(l.value(r), '')}`).join(', ')})`,
      )
      .join('; ') + (rows.length > 10 ? `; and ${rows.length - 10} more.` : '.');
  return figure({
    id: o.id,
    title: o.title,
    desc,
    height,
    body,
    legend: legend(o.layers),
    table: numbersTable(o.attr, o.title, o.first, rows, (r) => r.label, o.layers, ''),
  });
}
