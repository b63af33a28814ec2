// Contour map of a loss landscape: a smooth colour field, iso-lines (marching squares) and the path.

export interface Landscape {
  run: string;
  tag: string;
  step: number;
  steps: number[];
  x: (number | null)[];
  y: (number | null)[];
  values: (number | null)[][];
  shape: [number, number];
  downsampled: boolean;
  min: number | null;
  max: number | null;
  nan_count: number;
  path: (number | null)[][] | null;
  metadata: Record<string, unknown>;
}

/** A grid of numbers (NaN where missing), optionally on a log10 scale. */
export function grid(ls: Landscape, log: boolean): number[][] {
  return ls.values.map((row) =>
    row.map((v) => {
      if (v === null) return Number.NaN;
      if (!log) return v;
      return v > 0 ? Math.log10(v) : Number.NaN;
    }),
  );
}

export function extent(values: number[][]): [number, number] | null {
  let lo = Infinity;
  let hi = -Infinity;
  for (const row of values)
    for (const v of row)
      if (Number.isFinite(v)) {
        lo = Math.min(lo, v);
        hi = Math.max(hi, v);
      }
  return lo <= hi ? [lo, hi] : null;
}

/** `n` evenly spaced iso-levels strictly inside [lo, hi]. */
export function levels(lo: number, hi: number, n: number): number[] {
  if (!(hi > lo) || n < 1) return [];
  return Array.from({ length: n }, (_, i) => lo + ((i + 1) * (hi - lo)) / (n + 1));
}

/** Segments [c0, r0, c1, r1] (fractional column/row indices) of the iso-line at `level`. */
export function marchingSquares(v: number[][], level: number): number[][] {
  const out: number[][] = [];
  const rows = v.length;
  const cols = v[0]?.length ?? 0;
  const t = (a: number, b: number): number => (a === b ? 0.5 : (level - a) / (b - a));
  for (let i = 0; i + 1 < rows; i++) {
    for (let j = 0; j + 1 < cols; j++) {
      const a = v[i]![j]!; // (j, i)
      const b = v[i]![j + 1]!; // (j+1, i)
      const c = v[i + 1]![j + 1]!; // (j+1, i+1)
      const d = v[i + 1]![j]!; // (j, i+1)
      if (!(Number.isFinite(a) && Number.isFinite(b) && Number.isFinite(c) && Number.isFinite(d))) continue;
      const code = (a > level ? 8 : 0) | (b > level ? 4 : 0) | (c > level ? 2 : 0) | (d > level ? 1 : 0);
      if (code === 0 || code === 15) continue;
      const top: [number, number] = [j + t(a, b), i];
      const right: [number, number] = [j + 1, i + t(b, c)];
      const bottom: [number, number] = [j + t(d, c), i + 1];
      const left: [number, number] = [j, i + t(a, d)];
      const seg = (p: [number, number], q: [number, number]): void => {
        out.push([p[0], p[1], q[0], q[1]]);
      };
      const centreHigh = (a + b + c + d) / 4 > level;
      switch (code) {
        case 1: case 14: seg(left, bottom); break;
        case 2: case 13: seg(bottom, right); break;
        case 3: case 12: seg(left, right); break;
        case 4: case 11: seg(top, right); break;
        case 6: case 9: seg(top, bottom); break;
        case 7: case 8: seg(left, top); break;
        case 5: // a, c low; b, d high
          if (centreHigh) { seg(left, top); seg(bottom, right); } else { seg(top, right); seg(left, bottom); }
          break;
        case 10: // a, c high
          if (centreHigh) { seg(top, right); seg(left, bottom); } else { seg(left, top); seg(bottom, right); }
          break;
      }
    }
  }
  return out;
}

const STOPS: [number, number, number][] = [
  [68, 1, 84], [72, 40, 120], [62, 74, 137], [49, 104, 142], [38, 130, 142],
  [31, 158, 137], [53, 183, 121], [109, 205, 89], [180, 222, 44], [253, 231, 37],
];

/** Viridis-like colour of t in [0, 1]. */
export function colour(t: number): [number, number, number] {
  const x = Math.min(1, Math.max(0, t)) * (STOPS.length - 1);
  const i = Math.min(STOPS.length - 2, Math.floor(x));
  const f = x - i;
  const p = STOPS[i]!;
  const q = STOPS[i + 1]!;
  return [p[0] + f * (q[0] - p[0]), p[1] + f * (q[1] - p[1]), p[2] + f * (q[2] - p[2])];
}

/** Map a coordinate to a fractional index of a (monotonic) axis. */
export function toIndex(axis: number[], v: number): number {
  const n = axis.length;
  if (n < 2) return 0;
  for (let k = 0; k + 1 < n; k++) {
    const a = axis[k]!;
    const b = axis[k + 1]!;
    if ((v >= a && v <= b) || (v <= a && v >= b) || k + 2 === n) return k + (b === a ? 0 : (v - a) / (b - a));
  }
  return 0;
}

export interface Drawn {
  isolines: number;
  pathPoints: number;
  /** grid index -> pixel transform, for hover. */
  plot: { left: number; top: number; width: number; height: number; cols: number; rows: number };
}

export const PAD = { left: 66, right: 84, top: 16, bottom: 34 };

export function fmt(v: number, digits = 3): string {
  if (!Number.isFinite(v)) return "NaN";
  if (v === 0) return "0";
  return Math.abs(v) >= 1e4 || Math.abs(v) < 1e-2 ? v.toExponential(digits - 1) : v.toPrecision(digits);
}

/** Both ends of a range with enough digits to tell them apart (2.2912 … 2.2934, not 2.29 … 2.29). */
export function fmtRange(lo: number, hi: number): [string, string] {
  const scale = Math.max(Math.abs(lo), Math.abs(hi));
  const rel = hi > lo && scale > 0 ? (hi - lo) / scale : 1;
  const digits = Math.min(8, Math.max(3, Math.ceil(-Math.log10(rel)) + 1));
  return [fmt(lo, digits), fmt(hi, digits)];
}

/** Draw the contour map of `ls` on `canvas`; `range` fixes the colour scale (side by side). */
export function drawContour(
  canvas: HTMLCanvasElement,
  ls: Landscape,
  opts: { log: boolean; levels: number; range?: [number, number] | null },
): Drawn {
  const c = canvas.getContext("2d")!;
  const W = canvas.width;
  const H = canvas.height;
  c.clearRect(0, 0, W, H);
  c.fillStyle = "#fff";
  c.fillRect(0, 0, W, H);
  const v = grid(ls, opts.log);
  const rows = v.length;
  const cols = v[0]?.length ?? 0;
  const plot = { left: PAD.left, top: PAD.top, width: W - PAD.left - PAD.right, height: H - PAD.top - PAD.bottom, cols, rows };
  const ext = opts.range ?? extent(v);
  const px = (col: number): number => plot.left + (cols > 1 ? (col / (cols - 1)) * plot.width : plot.width / 2);
  const py = (row: number): number => plot.top + plot.height - (rows > 1 ? (row / (rows - 1)) * plot.height : plot.height / 2);
  // missing values show as a light grey hatch under the field
  c.fillStyle = "#e6e6e6";
  c.fillRect(plot.left, plot.top, plot.width, plot.height);
  let isolines = 0;
  if (ext && cols > 0 && rows > 0) {
    const [lo, hi] = ext;
    const span = hi > lo ? hi - lo : 1;
    const img = document.createElement("canvas");
    img.width = cols;
    img.height = rows;
    const ictx = img.getContext("2d")!;
    const data = ictx.createImageData(cols, rows);
    for (let i = 0; i < rows; i++)
      for (let j = 0; j < cols; j++) {
        const val = v[i]![j]!;
        const o = ((rows - 1 - i) * cols + j) * 4; // row 0 (lowest y) at the bottom
        if (!Number.isFinite(val)) continue;
        const [r, g, b] = colour((val - lo) / span);
        data.data[o] = r;
        data.data[o + 1] = g;
        data.data[o + 2] = b;
        data.data[o + 3] = 255;
      }
    ictx.putImageData(data, 0, 0);
    // pixel centres on the grid nodes: extend half a cell beyond the plot, then clip
    const cw = cols > 1 ? plot.width / (cols - 1) : plot.width;
    const ch = rows > 1 ? plot.height / (rows - 1) : plot.height;
    c.save();
    c.beginPath();
    c.rect(plot.left, plot.top, plot.width, plot.height);
    c.clip();
    c.imageSmoothingEnabled = true;
    c.drawImage(img, plot.left - cw / 2, plot.top - ch / 2, plot.width + cw, plot.height + ch);
    c.strokeStyle = "rgba(255,255,255,0.75)";
    c.lineWidth = 1;
    for (const level of levels(lo, hi, opts.levels)) {
      const segs = marchingSquares(v, level);
      if (segs.length) isolines++;
      c.beginPath();
      for (const [c0, r0, c1, r1] of segs) {
        c.moveTo(px(c0!), py(r0!));
        c.lineTo(px(c1!), py(r1!));
      }
      c.stroke();
    }
    c.restore();
    // colour bar
    const bx = W - PAD.right + 14;
    for (let k = 0; k < plot.height; k++) {
      const [r, g, b] = colour(1 - k / plot.height);
      c.fillStyle = `rgb(${r | 0},${g | 0},${b | 0})`;
      c.fillRect(bx, plot.top + k, 12, 1);
    }
    c.fillStyle = "#333";
    c.font = "11px sans-serif";
    const unit = opts.log ? "log10 " : "";
    const [tlo, thi] = fmtRange(lo, hi);
    c.fillText(unit + thi, bx - 4, plot.top - 4);
    c.fillText(unit + tlo, bx - 4, plot.top + plot.height + 12);
  }
  // axes
  const xs = ls.x.map((q) => q ?? Number.NaN);
  const ys = ls.y.map((q) => q ?? Number.NaN);
  c.strokeStyle = "#888";
  c.strokeRect(plot.left, plot.top, plot.width, plot.height);
  c.fillStyle = "#333";
  c.font = "11px sans-serif";
  for (const k of [0, 0.5, 1]) {
    const col = k * (cols - 1);
    const row = k * (rows - 1);
    const xv = xs[Math.round(col)] ?? Number.NaN;
    const yv = ys[Math.round(row)] ?? Number.NaN;
    c.textAlign = k === 0 ? "left" : k === 1 ? "right" : "center";
    c.fillText(fmt(xv), px(col), plot.top + plot.height + 14);
    c.textAlign = "right";
    c.fillText(fmt(yv), plot.left - 4, py(row) + (k === 0 ? 0 : k === 1 ? 9 : 4));
  }
  c.textAlign = "center";
  c.fillText("direction 1", plot.left + plot.width / 2, H - 4);
  c.save();
  c.translate(11, plot.top + plot.height / 2);
  c.rotate(-Math.PI / 2);
  c.fillText("direction 2", 0, 0);
  c.restore();
  c.textAlign = "start";
  // training path
  let pathPoints = 0;
  const pts = (ls.path ?? []).filter((p) => p[0] !== null && p[1] !== null && p[0] !== undefined && p[1] !== undefined);
  if (pts.length) {
    const xy = pts.map((p) => [px(toIndex(xs, p[0] as number)), py(toIndex(ys, p[1] as number))] as const);
    c.save();
    c.beginPath();
    c.rect(plot.left - 6, plot.top - 6, plot.width + 12, plot.height + 12);
    c.clip();
    c.strokeStyle = "#e15759";
    c.lineWidth = 2;
    c.beginPath();
    xy.forEach(([a, b], k) => (k ? c.lineTo(a, b) : c.moveTo(a, b)));
    c.stroke();
    c.fillStyle = "#e15759";
    for (const [a, b] of xy) {
      c.beginPath();
      c.arc(a, b, 2.5, 0, 2 * Math.PI);
      c.fill();
    }
    const [sx, sy] = xy[0]!;
    const [ex, ey] = xy[xy.length - 1]!;
    c.strokeStyle = "#fff";
    c.lineWidth = 2;
    c.beginPath();
    c.arc(sx, sy, 5, 0, 2 * Math.PI);
    c.fill();
    c.stroke();
    c.fillStyle = "#fff";
    c.beginPath();
    c.moveTo(ex, ey - 7);
    c.lineTo(ex + 6, ey + 5);
    c.lineTo(ex - 6, ey + 5);
    c.closePath();
    c.fill();
    c.strokeStyle = "#e15759";
    c.stroke();
    c.restore();
    pathPoints = pts.length;
  }
  return { isolines, pathPoints, plot };
}
