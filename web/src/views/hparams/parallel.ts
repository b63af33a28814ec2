// Parallel coordinates of the HParams table: one axis per shown column, one line per run;
// runs the filters leave out are drawn faint grey behind the others.
import type { HParamsRow, HParamValue } from "../../api/types";
import { formatNumber } from "../../core/format";
import { cell, type Column } from "./model";

const NS = "http://www.w3.org/2000/svg";

function el<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>): SVGElementTagNameMap[K] {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  return e;
}

/** Position in [0, 1] (0 = bottom) of a value on a column's axis, or null when missing. */
export function axisScale(col: Column, rows: HParamsRow[]): (v: HParamValue | null) => number | null {
  if (col.type === "number") {
    const nums = rows.map((r) => cell(r, col.key)).filter((v): v is number => typeof v === "number" && Number.isFinite(v));
    const lo = Math.min(...nums);
    const hi = Math.max(...nums);
    return (v) => (typeof v !== "number" || !Number.isFinite(v) || !nums.length ? null : hi > lo ? (v - lo) / (hi - lo) : 0.5);
  }
  const cats = col.values.length ? col.values.map(String) : [...new Set(rows.map((r) => String(cell(r, col.key))))];
  return (v) => {
    if (v === null) return null;
    const i = cats.indexOf(String(v));
    return i < 0 ? null : cats.length > 1 ? i / (cats.length - 1) : 0.5;
  };
}

function ticks(col: Column, rows: HParamsRow[]): [string, number][] {
  if (col.type === "number") {
    const nums = rows.map((r) => cell(r, col.key)).filter((v): v is number => typeof v === "number" && Number.isFinite(v));
    if (!nums.length) return [];
    const lo = Math.min(...nums);
    const hi = Math.max(...nums);
    return hi > lo ? [[formatNumber(lo), 0], [formatNumber(hi), 1]] : [[formatNumber(lo), 0.5]];
  }
  const scale = axisScale(col, rows);
  const cats = col.values.length ? col.values : [...new Set(rows.map((r) => cell(r, col.key)).filter((v) => v !== null))];
  return cats.map((c) => [String(c), scale(c) ?? 0]);
}

export function drawParallel(
  svg: SVGSVGElement,
  cols: Column[],
  all: HParamsRow[],
  shown: Set<string>,
  color: (run: string) => string,
): void {
  const width = Math.max(300, svg.clientWidth || 800);
  const height = 240;
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("height", String(height));
  svg.replaceChildren();
  if (cols.length < 2 || !all.length) {
    svg.dataset.lines = "0";
    const t = el("text", { x: 10, y: 20, class: "pc-empty" });
    t.textContent = "Parallel coordinates need at least two shown columns.";
    svg.append(t);
    return;
  }
  const top = 34;
  const bottom = height - 16;
  const left = 60;
  const right = width - 60;
  const xs = cols.map((_, i) => left + (i / (cols.length - 1)) * (right - left));
  const scales = cols.map((c) => axisScale(c, all));
  const y = (t: number): number => bottom - t * (bottom - top);
  // faint lines first, shown lines on top
  const ordered = [...all].sort((a, b) => Number(shown.has(a.run)) - Number(shown.has(b.run)));
  let lines = 0;
  for (const row of ordered) {
    const on = shown.has(row.run);
    // a run without a value on an axis skips it: its line joins the neighbouring axes
    let d = "";
    cols.forEach((c, i) => {
      const t = (scales[i] as (v: HParamValue | null) => number | null)(cell(row, c.key));
      if (t === null) return;
      d += `${d ? "L" : "M"}${(xs[i] as number).toFixed(1)},${y(t).toFixed(1)}`;
    });
    if (!d) continue;
    const path = el("path", { d, fill: "none", stroke: on ? color(row.run) : "#ccc", "stroke-width": on ? 2 : 1, class: on ? "pc-line" : "pc-line faint" });
    path.dataset.run = row.run;
    const title = el("title", {});
    title.textContent = row.run;
    path.append(title);
    svg.append(path);
    if (on) lines++;
  }
  cols.forEach((c, i) => {
    const x = xs[i] as number;
    svg.append(el("line", { x1: x, x2: x, y1: top, y2: bottom, class: "pc-axis" }));
    const label = el("text", { x, y: 14, class: `pc-label ${c.group}`, "text-anchor": "middle" });
    label.textContent = c.label.length > 22 ? `${c.label.slice(0, 21)}…` : c.label;
    const full = el("title", {});
    full.textContent = c.label;
    label.append(full);
    svg.append(label);
    for (const [text, t] of ticks(c, all)) {
      const tick = el("text", { x: x + 5, y: y(t) + 3, class: "pc-tick" });
      tick.textContent = text;
      svg.append(tick);
    }
  });
  svg.dataset.lines = String(lines);
}
