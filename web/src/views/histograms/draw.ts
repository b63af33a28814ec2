// Draw histogram records on a canvas, each source bucket as one flat segment between its
// edges (no rebinning). "front": records overlaid; "top": each record offset up-right by
// its y value (step or time), at 45 degrees, newest in front.
import { toNumber } from "../../api/client";
import type { HistogramRecordJson } from "../../api/types";
import { formatX, type XKind } from "../../core/chart";
import { formatNumber, niceTicks } from "../../core/format";

export type HistMode = "front" | "top";
/** "density": count / bucket width (shape-true for uneven buckets); "count": raw count. */
export type HistHeight = "density" | "count";

/** Bar heights of one record: counts, or counts divided by bucket width (clipped edges). */
export function heights(r: Decoded, height: HistHeight, xlo: number, xhi: number): number[] {
  return r.counts.map((c, i) => {
    const v = Number.isFinite(c) ? c : 0;
    if (height === "count") return v;
    const clamp = (e: number): number => (Number.isFinite(e) ? e : e > 0 ? xhi : xlo);
    const w = clamp(r.edges[i + 1] as number) - clamp(r.edges[i] as number);
    return w > 0 ? v / w : 0;
  });
}

export interface Decoded {
  y: number;
  edges: number[];
  counts: number[];
}

export function decode(records: HistogramRecordJson[], yKind: XKind): Decoded[] {
  const first = records.length ? Math.min(...records.map((r) => r.wall_time)) : 0;
  return records.map((r) => ({
    y: yKind === "step" ? r.step : yKind === "relative" ? r.wall_time - first : r.wall_time,
    edges: r.edges.map(toNumber),
    counts: r.counts.map(toNumber),
  }));
}

/** x extent over finite edges of all records (infinite outer edges are clipped to it). */
export function xExtent(records: Decoded[]): [number, number] {
  let lo = Infinity;
  let hi = -Infinity;
  for (const r of records) {
    for (const e of r.edges) {
      if (!Number.isFinite(e)) continue;
      lo = Math.min(lo, e);
      hi = Math.max(hi, e);
    }
  }
  if (!(hi > lo)) return [lo === Infinity ? 0 : lo - 1, lo === Infinity ? 1 : lo + 1];
  return [lo, hi];
}

/**
 * Top of the y axis for density: the 98th percentile of density, weighted by count, plus
 * 15 %. Narrow buckets holding a value or two (TensorFlow's buckets near 0 are 1e-12 wide)
 * would otherwise be spikes that flatten everything else; they are drawn clipped instead.
 */
export function densityTop(bars: number[][], records: Decoded[]): number {
  const pairs: [number, number][] = [];
  let total = 0;
  bars.forEach((b, k) =>
    b.forEach((v, i) => {
      const c = (records[k] as Decoded).counts[i] as number;
      if (Number.isFinite(c) && c > 0) {
        pairs.push([v, c]);
        total += c;
      }
    }),
  );
  if (!pairs.length) return 1;
  pairs.sort((a, b) => a[0] - b[0]);
  let acc = 0;
  for (const [v, c] of pairs) {
    acc += c;
    if (acc >= 0.98 * total) return v * 1.15 || 1;
  }
  return (pairs[pairs.length - 1] as [number, number])[0] || 1;
}

const CSS_HEIGHT = 260;
const BOX_TOP = 12;
const BOX_BOTTOM = 26;
/** Share of the plot height one record takes in "top" mode (the rest is the offset). */
const TOP_PLOT_FRAC = 0.4;

/**
 * Records worth asking the server for: "top" mode offsets records over this many device
 * pixel rows, so more would land on the same rows; overlaid ("front"), more only darken
 * the same lines. At least 2 (first and newest), at most 500 (the old default).
 */
export function recordsShown(dpr: number = window.devicePixelRatio || 1): number {
  const rows = (CSS_HEIGHT - BOX_TOP - BOX_BOTTOM) * (1 - TOP_PLOT_FRAC) * dpr;
  return Math.max(2, Math.min(500, Math.round(rows)));
}

export function drawHistograms(
  canvas: HTMLCanvasElement,
  records: Decoded[],
  mode: HistMode,
  yKind: XKind,
  color: string,
  height: HistHeight = "density",
): void {
  const cssW = canvas.clientWidth || 600;
  const cssH = CSS_HEIGHT;
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.round(cssW * dpr);
  canvas.height = Math.round(cssH * dpr);
  const ctx = canvas.getContext("2d");
  if (!ctx) return;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, cssW, cssH);
  ctx.font = "11px system-ui, sans-serif";
  const [xlo, xhi] = xExtent(records);
  const box = { x: 56, y: BOX_TOP, w: cssW - 56 - 16, h: cssH - BOX_TOP - BOX_BOTTOM };
  const offsetFrac = mode === "top" ? 0.45 : 0;
  const plotW = box.w * (1 - offsetFrac);
  const plotH = box.h * (mode === "top" ? TOP_PLOT_FRAC : 1);
  const bars = records.map((r) => heights(r, height, xlo, xhi));
  let maxCount = 0;
  for (const b of bars) for (const v of b) maxCount = Math.max(maxCount, v);
  if (height === "density") maxCount = Math.min(maxCount, densityTop(bars, records));
  if (maxCount <= 0) maxCount = 1;
  let clipped = 0;
  const ys = records.map((r) => r.y);
  const ylo = Math.min(...ys);
  const yhi = Math.max(...ys);
  const clampX = (e: number): number => (Number.isFinite(e) ? e : e > 0 ? xhi : xlo);

  // axes
  ctx.fillStyle = "#555";
  ctx.strokeStyle = "#ddd";
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  for (const t of niceTicks(xlo, xhi, Math.max(2, Math.floor(plotW / 90)))) {
    const px = box.x + ((t - xlo) / (xhi - xlo)) * plotW;
    ctx.fillText(formatNumber(t), px, box.y + box.h + 6);
  }
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  if (mode === "front") {
    for (const t of niceTicks(0, maxCount, 4)) {
      const py = box.y + box.h - (t / maxCount) * plotH;
      ctx.beginPath();
      ctx.moveTo(box.x, py);
      ctx.lineTo(box.x + box.w, py);
      ctx.stroke();
      ctx.fillText(formatNumber(t), box.x - 6, py);
    }
  }
  const offset = (y: number): number => (yhi > ylo ? (yhi - y) / (yhi - ylo) : 0);
  // oldest first so the newest is drawn in front
  const order = records.map((_, i) => i).sort((a, b) => (records[a] as Decoded).y - (records[b] as Decoded).y);
  order.forEach((idx, k) => {
    const r = records[idx] as Decoded;
    const t = order.length > 1 ? k / (order.length - 1) : 1;
    const off = mode === "top" ? offset(r.y) : 0;
    const dx = off * box.w * offsetFrac;
    const dy = -off * (box.h - plotH);
    const base = box.y + box.h + dy;
    ctx.beginPath();
    ctx.moveTo(box.x + dx, base);
    const bar = bars[idx] as number[];
    for (let i = 0; i < r.counts.length; i++) {
      const c = bar[i] as number;
      const x0 = box.x + dx + ((clampX(r.edges[i] as number) - xlo) / (xhi - xlo)) * plotW;
      const x1 = box.x + dx + ((clampX(r.edges[i + 1] as number) - xlo) / (xhi - xlo)) * plotW;
      if (c > maxCount) clipped++;
      const py = base - (Math.min(c, maxCount * 1.04) / maxCount) * plotH;
      ctx.lineTo(x0, py);
      ctx.lineTo(x1, py);
    }
    ctx.lineTo(box.x + dx + plotW, base);
    ctx.globalAlpha = mode === "top" ? 1 : 0.15 + 0.85 * t;
    ctx.strokeStyle = color;
    ctx.lineWidth = 1;
    if (mode === "top") {
      ctx.fillStyle = "rgba(255,255,255,0.85)";
      ctx.fill();
    }
    ctx.stroke();
    ctx.globalAlpha = 1;
    if (mode === "top" && (k === 0 || k === order.length - 1 || k % Math.ceil(order.length / 5) === 0)) {
      ctx.fillStyle = "#555";
      ctx.textAlign = "left";
      ctx.fillText(formatX(yKind, r.y), box.x + dx + plotW + 4, base);
    }
  });
  canvas.dataset.records = String(records.length);
  canvas.dataset.mode = mode;
  canvas.dataset.height = height;
  canvas.dataset.clipped = String(clipped);
}
