// Pure parts of the embeddings projector: API types, colour categories, label search, the
// 3-D rotation and screen mapping of the PCA coordinates, and hit testing.

export interface EmbeddingEntry {
  step: number;
  tensor_name: string;
  has_metadata: boolean;
  has_sprite: boolean;
  sprite_dim: [number, number] | null;
}

export interface EmbeddingsResponse {
  run: string;
  tag: string;
  embeddings: EmbeddingEntry[];
}

export interface ProjectionResponse {
  run: string;
  tag: string;
  step: number;
  tensor_name: string;
  points: number;
  features: number;
  shown: number;
  sampled: boolean;
  fit_points: number;
  indices: number[];
  coords: number[][];
  explained_variance: number[];
  columns: string[];
  metadata: string[][];
  sprite_dim: [number, number] | null;
  problems: string[];
}

export interface Neighbor {
  index: number;
  distance: number;
  metadata: string[];
}

export interface NeighborsResponse {
  index: number;
  metric: string;
  neighbors: Neighbor[];
}

/** 20 distinguishable colours (categories past them share OTHER_COLOR). */
export const CATEGORY_COLORS = [
  "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
  "#bcbd22", "#393b79", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94",
  "#f7b6d2", "#9edae5", "#dbdb8d", "#637939",
];
export const OTHER_COLOR = "#9a9a9a";
export const PLAIN_COLOR = "#3b6fb6";

export interface Categories {
  /** Legend entries, most frequent first; the last may be "(other)". */
  legend: { value: string; color: string; count: number }[];
  /** Colour of each point, in point order. */
  colors: string[];
}

/** Colour points by the values of one metadata column: the 19 most frequent values (20 when
 * there are no more) get a colour each, ties in first-seen order; the rest are "(other)". */
export function categorize(values: string[], max = CATEGORY_COLORS.length): Categories {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  const ranked = [...counts.entries()].sort((a, b) => b[1] - a[1]);
  const keep = ranked.length <= max ? ranked : ranked.slice(0, max - 1);
  const color = new Map<string, string>();
  const legend = keep.map(([value, count], i) => {
    const c = CATEGORY_COLORS[i % CATEGORY_COLORS.length] as string;
    color.set(value, c);
    return { value, color: c, count };
  });
  if (keep.length < ranked.length) {
    const rest = ranked.slice(keep.length).reduce((s, [, n]) => s + n, 0);
    legend.push({ value: "(other)", color: OTHER_COLOR, count: rest });
  }
  return { legend, colors: values.map((v) => color.get(v) ?? OTHER_COLOR) };
}

/** The column to colour by at first: the first one with 2 to 20 distinct values; -1: none. */
export function defaultColorColumn(columns: string[], rows: string[][]): number {
  for (let c = 0; c < columns.length; c++) {
    const distinct = new Set(rows.map((r) => r[c] ?? ""));
    if (distinct.size >= 2 && distinct.size <= CATEGORY_COLORS.length) return c;
  }
  return -1;
}

/** Which points' labels match `query` (a case-insensitive regular expression; an invalid
 * one is matched as plain text). An empty query matches nothing. */
export function matchLabels(labels: string[], query: string): boolean[] {
  const q = query.trim();
  if (!q) return labels.map(() => false);
  let re: RegExp | null = null;
  try {
    re = new RegExp(q, "i");
  } catch {
    re = null;
  }
  const lower = q.toLowerCase();
  return labels.map((l) => (re ? re.test(l) : l.toLowerCase().includes(lower)));
}

/** The label of each point: its value in column `col`, or `#<index>` without metadata. */
export function pointLabels(p: Pick<ProjectionResponse, "indices" | "metadata">, col: number): string[] {
  return p.indices.map((idx, j) => {
    const row = p.metadata[j];
    return row && col >= 0 && col < row.length ? (row[col] as string) : `#${idx}`;
  });
}

/** Rotate 3-D points by `yaw` (around y) then `pitch` (around x); 2-D points get z = 0.
 * Returns x, y, depth per point (flat, 3 per point). */
export function rotate(coords: number[][], yaw: number, pitch: number): Float64Array {
  const out = new Float64Array(coords.length * 3);
  const cy = Math.cos(yaw), sy = Math.sin(yaw), cp = Math.cos(pitch), sp = Math.sin(pitch);
  coords.forEach((c, i) => {
    const x = c[0] ?? 0, y = c[1] ?? 0, z = c[2] ?? 0;
    const x1 = cy * x + sy * z;
    const z1 = -sy * x + cy * z;
    const y2 = cp * y - sp * z1;
    const z2 = sp * y + cp * z1;
    out[i * 3] = x1;
    out[i * 3 + 1] = y2;
    out[i * 3 + 2] = z2;
  });
  return out;
}

export interface ScreenMap {
  scale: number;
  cx: number;
  cy: number;
}

/** Map rotated points into a `width` x `height` box with `pad` pixels of margin, same scale on
 * both axes (so distances look right), centred; y grows upwards on screen. 3-D views pass
 * `radius` (the largest distance from the origin) so the scale does not change as it turns. */
export function fitScreen(flat: Float64Array, width: number, height: number, pad: number, radius?: number): ScreenMap {
  let lo = [Infinity, Infinity], hi = [-Infinity, -Infinity];
  for (let i = 0; i < flat.length; i += 3) {
    const x = flat[i] as number, y = flat[i + 1] as number;
    lo = [Math.min(lo[0] as number, x), Math.min(lo[1] as number, y)];
    hi = [Math.max(hi[0] as number, x), Math.max(hi[1] as number, y)];
  }
  if (!Number.isFinite(lo[0] as number)) return { scale: 1, cx: width / 2, cy: height / 2 };
  let spanX = (hi[0] as number) - (lo[0] as number), spanY = (hi[1] as number) - (lo[1] as number);
  let midX = ((hi[0] as number) + (lo[0] as number)) / 2, midY = ((hi[1] as number) + (lo[1] as number)) / 2;
  if (radius !== undefined && radius > 0) {
    spanX = spanY = 2 * radius;
    midX = midY = 0;
  }
  const w = Math.max(1, width - 2 * pad), hgt = Math.max(1, height - 2 * pad);
  const scale = Math.min(spanX > 0 ? w / spanX : Infinity, spanY > 0 ? hgt / spanY : Infinity);
  const s = Number.isFinite(scale) ? scale : 1;
  return { scale: s, cx: width / 2 - midX * s, cy: height / 2 + midY * s };
}

/** Screen position (CSS pixels) of rotated point `i`. */
export function toScreen(flat: Float64Array, i: number, m: ScreenMap): [number, number] {
  return [m.cx + (flat[i * 3] as number) * m.scale, m.cy - (flat[i * 3 + 1] as number) * m.scale];
}

/** Largest distance of a point from the origin (PCA coordinates are centred). */
export function radiusOf(coords: number[][]): number {
  let r = 0;
  for (const c of coords) r = Math.max(r, Math.hypot(c[0] ?? 0, c[1] ?? 0, c[2] ?? 0));
  return r;
}

/** The point nearest to (x, y) within `within` pixels, the front-most on ties; -1: none. */
export function hitTest(flat: Float64Array, m: ScreenMap, x: number, y: number, within: number): number {
  let best = -1, bestD = within * within, bestZ = -Infinity;
  const n = flat.length / 3;
  for (let i = 0; i < n; i++) {
    const [sx, sy] = toScreen(flat, i, m);
    const d = (sx - x) ** 2 + (sy - y) ** 2;
    const z = flat[i * 3 + 2] as number;
    if (d < bestD || (d === bestD && best >= 0 && z > bestZ)) {
      best = i;
      bestD = d;
      bestZ = z;
    }
  }
  return best;
}

/** Drawing order: back to front (smallest depth first). */
export function depthOrder(flat: Float64Array): number[] {
  const n = flat.length / 3;
  const order = Array.from({ length: n }, (_, i) => i);
  return order.sort((a, b) => (flat[a * 3 + 2] as number) - (flat[b * 3 + 2] as number) || a - b);
}

/** CSS for one thumbnail of a sprite of `points` images tiled in ceil(sqrt(points)) columns. */
export function spriteCell(index: number, points: number, dim: [number, number]): { x: number; y: number; columns: number } {
  const columns = Math.ceil(Math.sqrt(points));
  return { x: (index % columns) * dim[0], y: Math.floor(index / columns) * dim[1], columns };
}

/** "PC1 62.0% · PC2 21.3%": each component's share of the variance. */
export function varianceText(explained: number[]): string {
  return explained.map((v, i) => `PC${i + 1} ${(100 * v).toFixed(1)}%`).join(" · ");
}

/** A continuous colour scale of a numeric metadata column. */
export interface NumericScale {
  min: number;
  max: number;
  /** Colour of each point, in point order (NO_VALUE_COLOR where a value is missing). */
  colors: string[];
}

/** Stops of the continuous scale (a perceptually ordered dark-blue → green → yellow ramp). */
export const SCALE_STOPS: [number, number, number][] = [
  [68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37],
];
export const NO_VALUE_COLOR = "#cccccc";

/** The colour at `t` in [0, 1] of the scale (clamped). */
export function scaleColor(t: number): string {
  const u = Math.max(0, Math.min(1, Number.isFinite(t) ? t : 0)) * (SCALE_STOPS.length - 1);
  const k = Math.min(Math.floor(u), SCALE_STOPS.length - 2);
  const f = u - k;
  const a = SCALE_STOPS[k] as [number, number, number], b = SCALE_STOPS[k + 1] as [number, number, number];
  const c = a.map((v, i) => Math.round(v + (b[i] as number - v) * f));
  return `rgb(${c[0]}, ${c[1]}, ${c[2]})`;
}

/** A column's values as numbers when every non-empty one is a finite number; else null. */
export function numericValues(values: string[]): number[] | null {
  const out: number[] = [];
  let any = false;
  for (const v of values) {
    const s = v.trim();
    if (s === "") {
      out.push(Number.NaN);
      continue;
    }
    const x = Number(s);
    if (!Number.isFinite(x)) return null;
    out.push(x);
    any = true;
  }
  return any ? out : null;
}

/** The continuous scale for a column that is numeric with more distinct values than there are
 * category colours (a loss, a confidence, a position); null: the column is categorical (ids,
 * classes and a few numbers keep their legend of distinct colours). */
export function numericScale(values: string[], maxCategories = CATEGORY_COLORS.length): NumericScale | null {
  const nums = numericValues(values);
  if (!nums) return null;
  const distinct = new Set(nums.filter((x) => Number.isFinite(x)));
  if (distinct.size <= maxCategories) return null;
  let min = Infinity, max = -Infinity;
  for (const x of distinct) {
    if (x < min) min = x;
    if (x > max) max = x;
  }
  const span = max - min || 1;
  return { min, max, colors: nums.map((x) => (Number.isFinite(x) ? scaleColor((x - min) / span) : NO_VALUE_COLOR)) };
}

/** Zoom and pan of the 2-D scatter on top of the fitted screen map (zoom 1, no shift: fitted). */
export interface ViewBox {
  zoom: number;
  dx: number;
  dy: number;
}

export const FITTED: ViewBox = { zoom: 1, dx: 0, dy: 0 };
export const MIN_ZOOM = 0.5;
export const MAX_ZOOM = 200;

/** The fitted map `m` of a `width` x `height` canvas zoomed about its centre and shifted. */
export function applyView(m: ScreenMap, v: ViewBox, width: number, height: number): ScreenMap {
  return {
    scale: m.scale * v.zoom,
    cx: width / 2 + (m.cx - width / 2) * v.zoom + v.dx,
    cy: height / 2 + (m.cy - height / 2) * v.zoom + v.dy,
  };
}

/** Zoom by `factor` keeping the point under the cursor (`px`, `py`) where it is. */
export function zoomAt(v: ViewBox, factor: number, px: number, py: number, width: number, height: number): ViewBox {
  const zoom = Math.max(MIN_ZOOM, Math.min(MAX_ZOOM, v.zoom * factor));
  const f = zoom / v.zoom;
  return {
    zoom,
    dx: px - width / 2 - (px - width / 2 - v.dx) * f,
    dy: py - height / 2 - (py - height / 2 - v.dy) * f,
  };
}
