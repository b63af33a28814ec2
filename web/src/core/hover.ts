// What a line chart shows under the cursor: for each series the point nearest the cursor's
// x (its value, smoothed value, step, relative and wall time), sorted by value, the one
// nearest the cursor in pixels marked; and which series lie hidden under another one.
// Pure functions over the chart's series, so they are tested without a canvas.
import { formatClock, formatDuration, formatNumber } from "./format";

/** The fields of a chart series the hover readout reads. */
export interface HoverSource {
  label: string;
  color: string;
  x: number[];
  /** Drawn values (smoothed when `raw` is given). */
  y: number[];
  raw?: number[];
  step?: number[];
  wallTime?: number[];
  /** Wall time of the series' first point (relative time = wall time - this). */
  firstWallTime?: number;
  axis: 0 | 1;
}

export interface HoverRow {
  /** Index of the series in the chart. */
  series: number;
  label: string;
  color: string;
  /** Index of the point within the series. */
  index: number;
  value: number;
  /** The smoothed value, or null when the chart draws raw values. */
  smoothed: number | null;
  step: number | null;
  relative: number | null;
  wallTime: number | null;
  x: number;
  /** Pixel position of the drawn point. */
  px: number;
  py: number;
  nearest: boolean;
}

/**
 * Index of the point whose x is nearest `x` (first of ties); -1 for an empty series.
 * Binary search when `xs` is ascending (the usual case), a scan otherwise.
 */
export function nearestIndex(xs: number[], x: number): number {
  const n = xs.length;
  if (!n) return -1;
  let sorted = true;
  for (let i = 1; i < n && sorted; i += Math.max(1, Math.floor(n / 64))) sorted = (xs[i] as number) >= (xs[i - 1] as number);
  if (sorted && (xs[n - 1] as number) >= (xs[0] as number)) {
    let lo = 0;
    let hi = n - 1;
    while (hi - lo > 1) {
      const mid = (lo + hi) >> 1;
      if ((xs[mid] as number) < x) lo = mid;
      else hi = mid;
    }
    const dl = Math.abs((xs[lo] as number) - x);
    const dh = Math.abs((xs[hi] as number) - x);
    // a flat run of equal x: take the first point of it
    let best = dh < dl ? hi : lo;
    while (best > 0 && xs[best - 1] === xs[best]) best--;
    return best;
  }
  let best = 0;
  for (let i = 1; i < n; i++) if (Math.abs((xs[i] as number) - x) < Math.abs((xs[best] as number) - x)) best = i;
  return best;
}

/**
 * One row per series that has a point within the visible x range: the point nearest
 * `x`; rows sorted by value, largest first (the order the lines have on screen), NaN last.
 * `toPx(series, index)` gives the drawn point's pixels; the row nearest `(cx, cy)` is
 * marked `nearest`.
 */
export function hoverRows(
  series: HoverSource[],
  x: number,
  toPx: (s: number, i: number) => [number, number] | null,
  cx: number,
  cy: number,
): HoverRow[] {
  const rows: HoverRow[] = [];
  series.forEach((s, k) => {
    const i = nearestIndex(s.x, x);
    if (i < 0) return;
    const value = (s.raw ?? s.y)[i] as number;
    const wall = s.wallTime?.[i];
    const px = toPx(k, i);
    rows.push({
      series: k,
      label: s.label,
      color: s.color,
      index: i,
      value,
      smoothed: s.raw ? (s.y[i] as number) : null,
      step: s.step?.[i] ?? null,
      wallTime: wall ?? null,
      relative: wall !== undefined && s.firstWallTime !== undefined ? wall - s.firstWallTime : null,
      x: s.x[i] as number,
      px: px ? px[0] : Number.NaN,
      py: px ? px[1] : Number.NaN,
      nearest: false,
    });
  });
  let best = -1;
  let bestD = Infinity;
  rows.forEach((r, k) => {
    const d = Math.hypot(r.px - cx, Number.isFinite(r.py) ? r.py - cy : 1e6);
    if (d < bestD) {
      bestD = d;
      best = k;
    }
  });
  if (best >= 0) (rows[best] as HoverRow).nearest = true;
  const key = (r: HoverRow): number => (Number.isNaN(r.value) ? -Infinity : r.value);
  rows.sort((a, b) => key(b) - key(a) || a.series - b.series);
  return rows;
}

/**
 * Series drawn under a later one for most of their length: index -> index of the series
 * covering it. A point is covered when the later series, at the same x, is drawn within
 * `tolPx` pixels; a series is covered when at least `share` of its points are. Charts with
 * more than `maxSeries` series skip the check (quadratic in the series count).
 */
export function coveredSeries(
  xs: number[][],
  pys: number[][],
  tolPx = 2.5,
  share = 0.6,
  maxSeries = 16,
): Map<number, number> {
  const out = new Map<number, number>();
  const n = xs.length;
  if (n < 2 || n > maxSeries) return out;
  for (let a = 0; a < n; a++) {
    const xa = xs[a] as number[];
    const ya = pys[a] as number[];
    let counted = 0;
    for (let i = 0; i < ya.length; i++) if (Number.isFinite(ya[i])) counted++;
    if (!counted) continue;
    for (let b = n - 1; b > a; b--) {
      const xb = xs[b] as number[];
      const yb = pys[b] as number[];
      if (!xb.length) continue;
      let close = 0;
      for (let i = 0; i < xa.length; i++) {
        const y = ya[i] as number;
        if (!Number.isFinite(y)) continue;
        const j = nearestIndex(xb, xa[i] as number);
        const other = yb[j] as number;
        if (Number.isFinite(other) && Math.abs(other - y) <= tolPx) close++;
      }
      if (close >= share * counted) {
        out.set(a, b);
        break;
      }
    }
  }
  return out;
}

function cell(text: string, cls: string): HTMLTableCellElement {
  const td = document.createElement("td");
  td.className = cls;
  td.textContent = text;
  return td;
}

/** The tooltip's table: a header, then one row per series (data-* attributes for tests). */
export function tooltipTable(rows: HoverRow[], smoothed: boolean): HTMLTableElement {
  const table = document.createElement("table");
  const head = document.createElement("tr");
  const names = ["", "run", "value", ...(smoothed ? ["smoothed"] : []), "step", "relative", "time"];
  for (const n of names) {
    const th = document.createElement("th");
    th.textContent = n;
    head.append(th);
  }
  table.append(head);
  for (const r of rows) {
    const tr = document.createElement("tr");
    tr.className = r.nearest ? "tt-row nearest" : "tt-row";
    tr.dataset.run = r.label;
    tr.dataset.value = String(r.value);
    if (r.step !== null) tr.dataset.step = String(r.step);
    if (r.smoothed !== null) tr.dataset.smoothed = String(r.smoothed);
    const sw = document.createElement("td");
    const dot = document.createElement("span");
    dot.className = "tt-swatch";
    dot.style.background = r.color;
    sw.append(dot);
    tr.append(sw, cell(r.label, "tt-run"), cell(formatNumber(r.value), "tt-value"));
    if (smoothed) tr.append(cell(r.smoothed === null ? "" : formatNumber(r.smoothed), "tt-smoothed"));
    tr.append(
      cell(r.step === null ? "" : String(r.step), "tt-step"),
      cell(r.relative === null ? "" : formatDuration(r.relative), "tt-relative"),
      cell(r.wallTime === null ? "" : formatClock(r.wallTime), "tt-time"),
    );
    table.append(tr);
  }
  return table;
}
