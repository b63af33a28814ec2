// A small canvas line chart: thousands of points per series, two y axes, log y,
// box-select zoom, non-finite markers and highlighted points. State that tests read is
// mirrored into data-* attributes of the canvas. Hovering shows a readout of every series at
// the cursor (core/hover.ts); a series drawn under another gets a halo and a legend mark.
import { formatClock, formatDuration, formatNumber, logTicks, niceTicks } from "./format";
import { coveredSeries, hoverRows, tooltipTable, type HoverRow, type HoverSource } from "./hover";


/** Legend entries drawn at most: a sweep of 1,000 runs would list 1,000 buttons per chart. */
const LEGEND_MAX = 40;
export type XKind = "step" | "relative" | "wall_time";

/** A series as drawn: the hover fields (`y` the main line, `raw` drawn faintly behind it when
 * smoothing is on; steps and wall times shown by the readout when given), plus looks. */
export interface ChartSeries extends HoverSource {
  dashed?: boolean;
  /** Points to mark with a highlight ring (threshold matches). */
  highlight?: boolean[];
  /** A band drawn translucent behind the line (margin charts): bounds at the same x. */
  band?: { lower: number[]; upper: number[] };
}

export interface Range {
  lo: number;
  hi: number;
}

export interface ZoomBox {
  x: Range;
  y: Range | null;
}

export interface ChartOptions {
  xKind: XKind;
  yLog: boolean;
  xRange: Range | null;
  yRange: Range | null;
  axisLabels: [string, string];
  onZoom?: (box: ZoomBox) => void;
  /** Draw a legend under the chart (one entry per series; click brings it to the front). */
  legend?: boolean;
  /** Build the hover tooltip's content from the readout rows (default: core/hover's table). */
  tooltip?: (rows: HoverRow[]) => HTMLElement;
}

const PAD = { left: 58, right: 14, top: 14, bottom: 28 };
const RIGHT_AXIS = 54;

function finiteRange(values: Iterable<number>, log: boolean): Range | null {
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of values) {
    if (!Number.isFinite(v) || (log && v <= 0)) continue;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (lo > hi) return null;
  if (lo === hi) {
    const d = log ? lo * 0.5 : Math.abs(lo) * 0.1 || 1;
    return { lo: lo - d, hi: hi + d };
  }
  if (!log) {
    const pad = (hi - lo) * 0.05;
    return { lo: lo - pad, hi: hi + pad };
  }
  return { lo: lo / 1.2, hi: hi * 1.2 };
}

export function formatX(kind: XKind, v: number): string {
  if (kind === "wall_time") return formatClock(v);
  if (kind === "relative") return formatDuration(v);
  return formatNumber(v);
}

export class LineChart {
  readonly canvas: HTMLCanvasElement;
  private series: ChartSeries[] = [];
  private opts: ChartOptions;
  private drag: { x0: number; y0: number; x1: number; y1: number } | null = null;
  private xr: Range = { lo: 0, hi: 1 };
  private yr: [Range, Range] = [{ lo: 0, hi: 1 }, { lo: 0, hi: 1 }];
  private readonly cssHeight: number;
  private readonly overlay: SVGSVGElement;
  private readonly tooltip: HTMLElement;
  private readonly legendEl: HTMLElement | null = null;
  /** Last cursor position over the plot (canvas pixels), or null when not hovering. */
  private cursor: { x: number; y: number; clientX: number; clientY: number } | null = null;
  /** Series index drawn last (on top), chosen in the legend; null: data order. */
  private front: number | null = null;
  private covered = new Map<number, number>();
  private pys: number[][] = [];

  constructor(parent: HTMLElement, opts: ChartOptions, height = 240) {
    this.opts = opts;
    this.cssHeight = height;
    const wrap = document.createElement("div");
    wrap.className = "chart-wrap";
    this.canvas = document.createElement("canvas");
    this.canvas.className = "chart";
    this.canvas.style.height = `${height}px`;
    this.overlay = document.createElementNS("http://www.w3.org/2000/svg", "svg");
    this.overlay.setAttribute("class", "chart-overlay");
    wrap.append(this.canvas, this.overlay);
    parent.append(wrap);
    if (opts.legend) {
      this.legendEl = document.createElement("div");
      this.legendEl.className = "chart-legend";
      parent.append(this.legendEl);
    }
    this.tooltip = document.createElement("div");
    this.tooltip.className = "chart-tooltip";
    this.tooltip.hidden = true;
    document.body.append(this.tooltip);
    this.canvas.addEventListener("mousedown", (e) => this.onDown(e));
    this.canvas.addEventListener("mousemove", (e) => this.onHover(e));
    this.canvas.addEventListener("mouseleave", () => this.hideHover());
    window.addEventListener("mousemove", this.moveListener);
    window.addEventListener("mouseup", this.upListener);
  }

  private readonly moveListener = (e: MouseEvent): void => this.onMove(e);
  private readonly upListener = (): void => this.onUp();

  /** Remove the window listeners and the tooltip (call when the chart leaves the page). */
  destroy(): void {
    window.removeEventListener("mousemove", this.moveListener);
    window.removeEventListener("mouseup", this.upListener);
    this.tooltip.remove();
  }

  /** Pixel width of the plot area: the `width` the API should downsample to. */
  plotWidth(): number {
    const w = this.canvas.clientWidth || 600;
    return Math.max(50, Math.round(w - PAD.left - PAD.right - RIGHT_AXIS));
  }

  setData(series: ChartSeries[], opts: Partial<ChartOptions> = {}): void {
    this.series = series;
    this.opts = { ...this.opts, ...opts };
    if (this.front !== null && this.front >= series.length) this.front = null;
    this.draw();
  }

  /** Series indices in drawing order (the legend's pick last). */
  private order(): number[] {
    const idx = this.series.map((_, i) => i);
    if (this.front === null) return idx;
    return [...idx.filter((i) => i !== this.front), this.front];
  }

  private hasRight(): boolean {
    return this.series.some((s) => s.axis === 1);
  }

  /** The plot area, computed once per draw (reading clientWidth forces a layout). */
  private box = { x: PAD.left, y: PAD.top, w: 100, h: 100 };

  private measureBox(): void {
    const w = this.canvas.clientWidth || 600;
    const right = PAD.right + (this.hasRight() ? RIGHT_AXIS : 0);
    this.box = { x: PAD.left, y: PAD.top, w: w - PAD.left - right, h: this.cssHeight - PAD.top - PAD.bottom };
  }

  private plotBox(): { x: number; y: number; w: number; h: number } {
    return this.box;
  }

  private sx(v: number): number {
    const b = this.plotBox();
    return b.x + ((v - this.xr.lo) / (this.xr.hi - this.xr.lo || 1)) * b.w;
  }

  private sy(v: number, axis: 0 | 1): number {
    const b = this.plotBox();
    const r = this.yr[axis];
    if (this.opts.yLog) {
      const t = (Math.log10(v) - Math.log10(r.lo)) / (Math.log10(r.hi) - Math.log10(r.lo) || 1);
      return b.y + b.h - t * b.h;
    }
    return b.y + b.h - ((v - r.lo) / (r.hi - r.lo || 1)) * b.h;
  }

  private invX(px: number): number {
    const b = this.plotBox();
    return this.xr.lo + ((px - b.x) / b.w) * (this.xr.hi - this.xr.lo);
  }

  private invY(py: number): number {
    const b = this.plotBox();
    const t = (b.y + b.h - py) / b.h;
    const r = this.yr[0];
    if (this.opts.yLog) return Math.pow(10, Math.log10(r.lo) + t * (Math.log10(r.hi) - Math.log10(r.lo)));
    return r.lo + t * (r.hi - r.lo);
  }

  private computeRanges(): void {
    if (this.opts.xRange) {
      this.xr = this.opts.xRange;
    } else {
      // no padding on x: the data spans the chart
      let lo = Infinity;
      let hi = -Infinity;
      for (const s of this.series) {
        for (const x of s.x) {
          if (x < lo) lo = x;
          if (x > hi) hi = x;
        }
      }
      if (!(hi >= lo)) this.xr = { lo: 0, hi: 1 };
      else if (lo === hi) this.xr = { lo: lo - 1, hi: hi + 1 };
      else this.xr = { lo, hi };
    }
    for (const axis of [0, 1] as const) {
      if (axis === 0 && this.opts.yRange) {
        this.yr[0] = this.opts.yRange;
        continue;
      }
      const vals: number[] = [];
      for (const s of this.series) {
        if (s.axis !== axis) continue;
        const { x, y, raw } = s;
        for (let i = 0; i < x.length; i++) {
          const xi = x[i] as number;
          if (xi < this.xr.lo || xi > this.xr.hi) continue;
          vals.push(y[i] as number);
          if (raw) vals.push(raw[i] as number);
          if (s.band) vals.push(s.band.lower[i] as number, s.band.upper[i] as number);
        }
      }
      this.yr[axis] = finiteRange(vals, this.opts.yLog) ?? (this.opts.yLog ? { lo: 0.1, hi: 10 } : { lo: 0, hi: 1 });
    }
  }

  draw(): void {
    const dpr = window.devicePixelRatio || 1;
    const cssW = this.canvas.clientWidth || 600;
    this.canvas.width = Math.round(cssW * dpr);
    this.canvas.height = Math.round(this.cssHeight * dpr);
    const ctx = this.canvas.getContext("2d");
    if (!ctx) return;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, cssW, this.cssHeight);
    this.measureBox();
    this.computeRanges();
    const b = this.plotBox();
    this.drawAxes(ctx, b);

    let points = 0;
    let nonfinite = 0;
    let highlighted = 0;
    let hiddenLog = 0;
    ctx.save();
    ctx.beginPath();
    ctx.rect(b.x, b.y, b.w, b.h);
    ctx.clip();
    // pixel y of every drawn point; series hidden under a later one get a halo first
    this.pys = this.series.map((s) => s.y.map((v) => (Number.isFinite(v) && !(this.opts.yLog && v <= 0) ? this.sy(v, s.axis) : Number.NaN)));
    const order = this.order();
    const covered = coveredSeries(order.map((i) => this.series[i]?.x ?? []), order.map((i) => this.pys[i] ?? []));
    this.covered = new Map([...covered].map(([a, c]) => [order[a] as number, order[c] as number]));
    let bands = 0;
    for (const s of this.series) if (s.band) bands += this.drawBand(ctx, s, s.band);
    for (const i of this.covered.keys()) this.drawHalo(ctx, this.series[i] as ChartSeries, this.pys[i] as number[]);
    for (const s of order.map((i) => this.series[i] as ChartSeries)) {
      if (s.raw) this.drawLine(ctx, s, s.raw, true);
      const drawn = this.drawLine(ctx, s, s.y, false);
      points += drawn.points;
      hiddenLog += drawn.hidden;
      if (s.highlight) {
        ctx.fillStyle = "#e6007e";
        s.x.forEach((x, i) => {
          const v = (s.raw ?? s.y)[i] as number;
          if (!s.highlight?.[i] || !Number.isFinite(v) || (this.opts.yLog && v <= 0)) return;
          if (x < this.xr.lo || x > this.xr.hi) return;
          ctx.beginPath();
          ctx.arc(this.sx(x), this.sy(v, s.axis), 2.2, 0, Math.PI * 2);
          ctx.fill();
          highlighted++;
        });
      }
    }
    ctx.restore();
    // non-finite markers sit on the plot edges: +Inf top, -Inf bottom, NaN top (hollow)
    for (const s of this.series) {
      const vals = s.raw ?? s.y;
      s.x.forEach((x, i) => {
        const v = vals[i] as number;
        if (Number.isFinite(v) || x < this.xr.lo || x > this.xr.hi) return;
        nonfinite++;
        const px = this.sx(x);
        ctx.fillStyle = s.color;
        ctx.strokeStyle = "#c00";
        ctx.lineWidth = 1.5;
        ctx.beginPath();
        if (Number.isNaN(v)) {
          ctx.moveTo(px, b.y - 6);
          ctx.lineTo(px + 5, b.y);
          ctx.lineTo(px, b.y + 6);
          ctx.lineTo(px - 5, b.y);
          ctx.closePath();
          ctx.stroke();
        } else if (v > 0) {
          ctx.moveTo(px, b.y - 2);
          ctx.lineTo(px + 5, b.y + 7);
          ctx.lineTo(px - 5, b.y + 7);
          ctx.closePath();
          ctx.fill();
          ctx.stroke();
        } else {
          ctx.moveTo(px, b.y + b.h + 2);
          ctx.lineTo(px + 5, b.y + b.h - 7);
          ctx.lineTo(px - 5, b.y + b.h - 7);
          ctx.closePath();
          ctx.fill();
          ctx.stroke();
        }
      });
    }
    if (this.drag) {
      const { x0, y0, x1, y1 } = this.drag;
      ctx.fillStyle = "rgba(30, 120, 220, 0.15)";
      ctx.strokeStyle = "rgba(30, 120, 220, 0.8)";
      ctx.fillRect(Math.min(x0, x1), Math.min(y0, y1), Math.abs(x1 - x0), Math.abs(y1 - y0));
      ctx.strokeRect(Math.min(x0, x1), Math.min(y0, y1), Math.abs(x1 - x0), Math.abs(y1 - y0));
    }
    const d = this.canvas.dataset;
    d.points = String(points);
    d.nonfinite = String(nonfinite);
    d.highlighted = String(highlighted);
    d.bands = String(bands);
    d.hiddenLog = String(hiddenLog);
    d.ylog = String(this.opts.yLog);
    d.xlo = String(this.xr.lo);
    d.xhi = String(this.xr.hi);
    d.series = String(this.series.length);
    d.axes = this.hasRight() ? "2" : "1";
    d.smoothed = String(this.series.some((s) => s.raw !== undefined));
    d.covered = [...this.covered.keys()].map((i) => this.series[i]?.label ?? "").join("|");
    this.renderLegend();
    if (this.cursor) this.showHover();
  }

  /** The filled area between a series' bounds, one polygon per finite stretch; returns its points. */
  private drawBand(ctx: CanvasRenderingContext2D, s: ChartSeries, band: { lower: number[]; upper: number[] }): number {
    ctx.fillStyle = s.color;
    ctx.globalAlpha = 0.18;
    let drawn = 0;
    let start = 0;
    const flush = (end: number): void => {
      if (end - start >= 1) {
        ctx.beginPath();
        for (let i = start; i < end; i++) {
          const px = this.sx(s.x[i] as number);
          const py = this.sy(band.upper[i] as number, s.axis);
          if (i === start) ctx.moveTo(px, py);
          else ctx.lineTo(px, py);
        }
        for (let i = end - 1; i >= start; i--) ctx.lineTo(this.sx(s.x[i] as number), this.sy(band.lower[i] as number, s.axis));
        ctx.closePath();
        ctx.fill();
        drawn += end - start;
      }
    };
    const ok = (i: number): boolean => {
      const lo = band.lower[i] as number;
      const hi = band.upper[i] as number;
      return Number.isFinite(lo) && Number.isFinite(hi) && !(this.opts.yLog && (lo <= 0 || hi <= 0));
    };
    for (let i = 0; i <= s.x.length; i++) {
      if (i < s.x.length && ok(i)) continue;
      flush(i);
      start = i + 1;
    }
    ctx.globalAlpha = 1;
    return drawn;
  }

  /** A wide translucent band along a series that another series draws over. */
  private drawHalo(ctx: CanvasRenderingContext2D, s: ChartSeries, pys: number[]): void {
    ctx.strokeStyle = s.color;
    ctx.globalAlpha = 0.35;
    ctx.lineWidth = 7;
    ctx.lineJoin = "round";
    ctx.setLineDash([]);
    ctx.beginPath();
    let pen = false;
    for (let i = 0; i < s.x.length; i++) {
      const py = pys[i] as number;
      if (!Number.isFinite(py)) {
        pen = false;
        continue;
      }
      const px = this.sx(s.x[i] as number);
      if (pen) ctx.lineTo(px, py);
      else ctx.moveTo(px, py);
      pen = true;
    }
    ctx.stroke();
    ctx.globalAlpha = 1;
    ctx.lineJoin = "miter";
  }

  private renderLegend(): void {
    const el = this.legendEl;
    if (!el) return;
    el.replaceChildren();
    this.series.forEach((s, i) => {
      if (i >= LEGEND_MAX) return;
      const item = document.createElement("button");
      item.type = "button";
      item.className = "legend-item";
      if (this.front === i) item.classList.add("front");
      item.dataset.label = s.label;
      item.title = "click: draw this run on top";
      const swatch = document.createElement("span");
      swatch.className = s.dashed ? "legend-swatch dashed" : "legend-swatch";
      swatch.style.borderColor = s.color;
      item.append(swatch, s.label);
      const under = this.covered.get(i);
      if (under !== undefined) {
        item.classList.add("covered");
        item.dataset.under = this.series[under]?.label ?? "";
        const note = document.createElement("span");
        note.className = "legend-note";
        note.textContent = ` under ${this.series[under]?.label ?? ""}`;
        item.append(note);
      }
      item.addEventListener("click", () => {
        this.front = this.front === i ? null : i;
        this.draw();
      });
      el.append(item);
    });
    if (this.series.length > LEGEND_MAX) {
      const more = document.createElement("span");
      more.className = "legend-more";
      more.textContent = `… and ${this.series.length - LEGEND_MAX} more (hover the chart for their values)`;
      el.append(more);
    }
  }

  private onHover(e: MouseEvent): void {
    if (this.drag) return;
    const p = this.local(e);
    const b = this.plotBox();
    if (p.x < b.x || p.x > b.x + b.w || p.y < b.y - 4 || p.y > b.y + b.h + 4) {
      this.hideHover();
      return;
    }
    this.cursor = { x: p.x, y: p.y, clientX: e.clientX, clientY: e.clientY };
    this.showHover();
  }

  private hideHover(): void {
    this.cursor = null;
    this.tooltip.hidden = true;
    this.overlay.replaceChildren();
    delete this.canvas.dataset.hoverStep;
  }

  /** The rows the readout shows at the current cursor (empty when not hovering). */
  hoverRows(): HoverRow[] {
    const c = this.cursor;
    if (!c) return [];
    const x = this.invX(c.x);
    const rows = hoverRows(
      this.series,
      x,
      (k, i) => {
        const s = this.series[k] as ChartSeries;
        return [this.sx(s.x[i] as number), this.pys[k]?.[i] ?? Number.NaN];
      },
      c.x,
      c.y,
    );
    return rows.filter((r) => r.x >= this.xr.lo && r.x <= this.xr.hi);
  }

  private showHover(): void {
    const c = this.cursor;
    if (!c) return;
    const rows = this.hoverRows();
    const b = this.plotBox();
    const ns = "http://www.w3.org/2000/svg";
    const line = document.createElementNS(ns, "line");
    line.setAttribute("x1", String(c.x));
    line.setAttribute("x2", String(c.x));
    line.setAttribute("y1", String(b.y));
    line.setAttribute("y2", String(b.y + b.h));
    line.setAttribute("class", "hover-line");
    const dots = rows
      .filter((r) => Number.isFinite(r.py))
      .map((r) => {
        const dot = document.createElementNS(ns, "circle");
        dot.setAttribute("cx", String(r.px));
        dot.setAttribute("cy", String(r.py));
        dot.setAttribute("r", r.nearest ? "5" : "3.5");
        dot.setAttribute("fill", r.color);
        dot.setAttribute("class", r.nearest ? "hover-dot nearest" : "hover-dot");
        return dot;
      });
    this.overlay.replaceChildren(line, ...dots);
    if (!rows.length) {
      this.tooltip.hidden = true;
      return;
    }
    const nearest = rows.find((r) => r.nearest) ?? rows[0];
    this.canvas.dataset.hoverStep = String(nearest?.step ?? nearest?.x ?? "");
    const content = this.opts.tooltip ? this.opts.tooltip(rows) : tooltipTable(rows, this.series.some((s) => s.raw !== undefined));
    this.tooltip.replaceChildren(content);
    this.tooltip.hidden = false;
    // right of the cursor, flipped left or up when it would leave the window
    const w = this.tooltip.offsetWidth;
    const hgt = this.tooltip.offsetHeight;
    let left = c.clientX + 16;
    if (left + w > window.innerWidth - 4) left = Math.max(4, c.clientX - 16 - w);
    let top = c.clientY + 12;
    if (top + hgt > window.innerHeight - 4) top = Math.max(4, c.clientY - 12 - hgt);
    this.tooltip.style.left = `${left}px`;
    this.tooltip.style.top = `${top}px`;
  }

  private drawLine(
    ctx: CanvasRenderingContext2D,
    s: ChartSeries,
    ys: number[],
    faint: boolean,
  ): { points: number; hidden: number } {
    ctx.strokeStyle = s.color;
    ctx.globalAlpha = faint ? 0.25 : 1;
    ctx.lineWidth = faint ? 1 : 1.6;
    ctx.setLineDash(s.dashed ? [6, 4] : []);
    ctx.beginPath();
    let pen = false;
    let points = 0;
    let hidden = 0;
    for (let i = 0; i < s.x.length; i++) {
      const v = ys[i] as number;
      if (!Number.isFinite(v) || (this.opts.yLog && v <= 0)) {
        if (this.opts.yLog && Number.isFinite(v)) hidden++;
        pen = false;
        continue;
      }
      const px = this.sx(s.x[i] as number);
      const py = this.sy(v, s.axis);
      if (pen) ctx.lineTo(px, py);
      else ctx.moveTo(px, py);
      pen = true;
      points++;
    }
    if (points === 1) {
      // a single point: draw a dot so it is visible
      const i = ys.findIndex((v) => Number.isFinite(v));
      ctx.arc(this.sx(s.x[i] as number), this.sy(ys[i] as number, s.axis), 2, 0, Math.PI * 2);
    }
    ctx.stroke();
    ctx.setLineDash([]);
    ctx.globalAlpha = 1;
    return { points: faint ? 0 : points, hidden: faint ? 0 : hidden };
  }

  private drawAxes(ctx: CanvasRenderingContext2D, b: { x: number; y: number; w: number; h: number }): void {
    ctx.font = "11px system-ui, sans-serif";
    ctx.strokeStyle = "#ddd";
    ctx.fillStyle = "#555";
    ctx.lineWidth = 1;
    const xt = niceTicks(this.xr.lo, this.xr.hi, Math.max(2, Math.floor(b.w / 90)));
    ctx.textAlign = "center";
    ctx.textBaseline = "top";
    for (const t of xt) {
      const px = this.sx(t);
      if (px < b.x - 0.5 || px > b.x + b.w + 0.5) continue;
      ctx.beginPath();
      ctx.moveTo(px, b.y);
      ctx.lineTo(px, b.y + b.h);
      ctx.stroke();
      ctx.fillText(formatX(this.opts.xKind, t), px, b.y + b.h + 6);
    }
    const axes: (0 | 1)[] = this.hasRight() ? [0, 1] : [0];
    for (const axis of axes) {
      const r = this.yr[axis];
      const yt = this.opts.yLog ? logTicks(r.lo, r.hi) : niceTicks(r.lo, r.hi, Math.max(2, Math.floor(b.h / 40)));
      ctx.textAlign = axis === 0 ? "right" : "left";
      ctx.textBaseline = "middle";
      for (const t of yt) {
        const py = this.sy(t, axis);
        if (py < b.y - 0.5 || py > b.y + b.h + 0.5) continue;
        if (axis === 0) {
          ctx.beginPath();
          ctx.moveTo(b.x, py);
          ctx.lineTo(b.x + b.w, py);
          ctx.stroke();
        }
        ctx.fillText(formatNumber(t), axis === 0 ? b.x - 6 : b.x + b.w + 6, py);
      }
    }
    ctx.strokeStyle = "#999";
    ctx.strokeRect(b.x, b.y, b.w, b.h);
  }

  private local(e: MouseEvent): { x: number; y: number } {
    const rect = this.canvas.getBoundingClientRect();
    return { x: e.clientX - rect.left, y: e.clientY - rect.top };
  }

  private onDown(e: MouseEvent): void {
    const p = this.local(e);
    const b = this.plotBox();
    if (p.x < b.x || p.x > b.x + b.w || p.y < b.y || p.y > b.y + b.h) return;
    e.preventDefault();
    this.hideHover();
    this.drag = { x0: p.x, y0: p.y, x1: p.x, y1: p.y };
  }

  private onMove(e: MouseEvent): void {
    if (!this.drag) return;
    const p = this.local(e);
    const b = this.plotBox();
    this.drag.x1 = Math.min(Math.max(p.x, b.x), b.x + b.w);
    this.drag.y1 = Math.min(Math.max(p.y, b.y), b.y + b.h);
    this.draw();
  }

  private onUp(): void {
    const d = this.drag;
    if (!d) return;
    this.drag = null;
    if (Math.abs(d.x1 - d.x0) < 5) {
      this.draw();
      return;
    }
    const x = { lo: this.invX(Math.min(d.x0, d.x1)), hi: this.invX(Math.max(d.x0, d.x1)) };
    // a flat box (under 5 px tall) zooms x only
    const y = Math.abs(d.y1 - d.y0) < 5 ? null : { lo: this.invY(Math.max(d.y0, d.y1)), hi: this.invY(Math.min(d.y0, d.y1)) };
    this.opts.onZoom?.({ x, y });
  }
}
