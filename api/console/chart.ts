// A bar chart of the daily series as inline SVG (no script, no external asset): for each day,
// sent, delivered and bounced side by side, scaled to the window's largest value.
import type { SeriesRow } from '../../shared/metrics/report.js';
import { html, type Safe } from './html.js';

const W = 760;
const H = 200;
const PAD_LEFT = 44;
const PAD_BOTTOM = 20;
const BARS = [
  { cls: 'sent', label: 'sent', value: (r: SeriesRow) => Number(r.sent) },
  { cls: 'delivered', label: 'delivered', value: (r: SeriesRow) => Number(r.delivered) },
  { cls: 'bounced', label: 'bounced', value: (r: SeriesRow) => Number(r.bouncedHard) + Number(r.bouncedSoft) },
];

export function barChart(series: SeriesRow[]): Safe {
  const max = Math.max(1, ...series.flatMap((r) => BARS.map((b) => b.value(r))));
  const plotW = W - PAD_LEFT;
  const plotH = H - PAD_BOTTOM;
  const slot = plotW / Math.max(1, series.length);
  const barW = Math.max(1, (slot * 0.8) / BARS.length);
  const bars = series.flatMap((r, i) =>
    BARS.map((b, j) => {
      const v = b.value(r);
      const h = (v / max) * (plotH - 4);
      const x = PAD_LEFT + i * slot + slot * 0.1 + j * barW;
      return html`<rect
        class="${b.cls}"
        x="${x.toFixed(1)}"
        y="${(plotH - h).toFixed(1)}"
        width="${barW.toFixed(1)}"
        height="${h.toFixed(1)}"
        ><title>${r.day}: ${v} ${b.label}</title></rect
      >`;
    }),
  );
  const first = series[0]?.day ?? '';
  const last = series.at(-1)?.day ?? '';
  return html`<svg
      class="chart"
      role="img"
      aria-label="Sent, delivered and bounced per day"
      viewBox="0 0 ${W} ${H}"
      width="100%"
      height="${H}"
    >
      <line x1="${PAD_LEFT}" y1="${plotH}" x2="${W}" y2="${plotH}" stroke="#999" />
      <text x="${PAD_LEFT - 4}" y="12" font-size="11" text-anchor="end">${max}</text>
      <text x="${PAD_LEFT - 4}" y="${plotH}" font-size="11" text-anchor="end">0</text>
      <text x="${PAD_LEFT}" y="${H - 4}" font-size="11">${first}</text>
      <text x="${W}" y="${H - 4}" font-size="11" text-anchor="end">${last}</text>
      ${bars}
    </svg>
    <p class="legend">${BARS.map((b) => html`<span><i class="sw ${b.cls}"></i>${b.label}</span>`)}</p>`;
}
