// The results table: one page of rows, sortable headers, a colour scale per metric column.
import type { JsonNumber } from "../../api/types";
import { h } from "../../core/state";
import { badness, fmtMetric, fmtRatio, ratioBadness, VERDICT_COLORS, verdictTint } from "./scale";
import type { Row } from "./types";

export interface TableOptions {
  metrics: string[]; // metric columns shown, in order
  budget: boolean; // show the err/budget column (budget profile)
  higher: Set<string>;
  ranges: Record<string, [number, number] | null>;
  sort: string | null;
  desc: boolean;
  firstDivergence: number | null;
  selected: number | null;
  onSort: (column: string) => void;
  onSelect: (row: Row) => void;
}

const IDENTITY: [string, string][] = [
  ["position", "index"],
  ["op", "op"],
  ["module_path", "module"],
  ["direction", "dir"],
  ["tensor", "tensor"],
];

function shape(r: Row): string {
  const b = r.shape_bench ? `[${r.shape_bench.join(",")}]` : "–";
  const t = r.shape_target ? `[${r.shape_target.join(",")}]` : "–";
  return b === t ? b : `${b} → ${t}`;
}

const SHORT_DTYPE: Record<string, string> = {
  float64: "f64", float32: "f32", float16: "f16", bfloat16: "bf16", int64: "i64", int32: "i32",
  int16: "i16", int8: "i8", uint8: "u8", bool: "bool", float8_e4m3fn: "f8e4m3", float8_e5m2: "f8e5m2",
};

/** Short dtype names for the table ("float32 → bfloat16" -> "f32 → bf16"); the title keeps them whole. */
export function shortDtype(d: string | null): string {
  return d === null ? "–" : (SHORT_DTYPE[d] ?? d);
}

function dtype(r: Row): string {
  const b = shortDtype(r.dtype_bench);
  const t = shortDtype(r.dtype_target);
  return b === t ? b : `${b} → ${t}`;
}

function verdictCell(r: Row): HTMLElement {
  if (r.one_sided) return h("td", { class: "verdict one-sided", title: "on one side only by design: neutral" }, "one-sided");
  const td = h("td", { class: "verdict" }, r.verdict);
  td.style.color = VERDICT_COLORS[r.verdict] ?? "";
  return td;
}

export function renderTable(el: HTMLElement, rows: Row[], o: TableOptions): void {
  const head = h("tr", {});
  const th = (key: string, label: string, title = ""): HTMLElement => {
    const arrow = o.sort === key || (key === "position" && o.sort === null) ? (o.desc ? " ▼" : " ▲") : "";
    const cell = h("th", { "data-col": key, title: title || `sort by ${label}` }, label + arrow);
    cell.addEventListener("click", () => o.onSort(key));
    return cell;
  };
  for (const [key, label] of IDENTITY) head.append(th(key, label));
  head.append(th("verdict", "verdict"));
  if (o.budget) head.append(th("budget_ratio", "err/budget", "the row's error ÷ its budget (what its dtypes, reduction length and inputs explain): above 1 the op adds error; click to sort"));
  for (const m of o.metrics) {
    const r = o.ranges[m];
    head.append(th(m, m, r ? `${m}: ${fmtMetric(m, r[0])} .. ${fmtMetric(m, r[1])} (click to sort)` : m));
  }
  head.append(h("th", { class: "nosort" }, "shape"), h("th", { class: "nosort" }, "dtype"), h("th", { class: "nosort" }, "reason"));
  const body = h("tbody", {});
  for (const r of rows) {
    const tr = h("tr", { "data-position": String(r.position), "data-verdict": r.verdict });
    if (r.position === o.firstDivergence) tr.classList.add("first");
    if (r.position === o.selected) tr.classList.add("selected");
    if (r.match === "unmatched") tr.classList.add("unmatched");
    if (r.one_sided) tr.classList.add("one-sided");
    tr.append(
      h("td", { class: "num", title: `row ${r.position}` }, r.index === null ? "–" : String(r.index)),
      h("td", { class: "op", title: r.op }, r.op),
      h("td", { class: "module", title: r.module_path }, r.module_path),
      h("td", {}, r.direction === "backward" ? "bwd" : "fwd"),
      h("td", {}, r.tensor),
      verdictCell(r),
    );
    if (o.budget) {
      const td = h("td", { class: "num ratio", "data-col": "budget_ratio" }, fmtRatio(r.budget_ratio));
      td.style.background = verdictTint(r.verdict, ratioBadness(r.budget_ratio));
      tr.append(td);
    }
    for (const m of o.metrics) {
      const v = r[m] as JsonNumber | null;
      const td = h("td", { class: "num metric", "data-metric": m }, fmtMetric(m, v));
      td.style.background = verdictTint(r.verdict, badness(v, m, o.ranges[m], o.higher.has(m)));
      tr.append(td);
    }
    tr.append(
      h("td", { class: "mono" }, shape(r)),
      h("td", { class: "mono", title: `${r.dtype_bench ?? "–"} → ${r.dtype_target ?? "–"}` }, dtype(r)),
      h("td", { class: "reason", title: r.reason }, r.reason),
    );
    tr.addEventListener("click", () => o.onSelect(r));
    body.append(tr);
  }
  const table = h("table", { class: "cmp-table", id: "cmp-table" }, h("thead", {}, head), body);
  el.replaceChildren(table);
}
