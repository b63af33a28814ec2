// The HParams table's columns, sorting and filters, as pure functions over the API's rows.
import { toNumber } from "../../api/client";
import type { HParamsRow, HParamsTable, HParamValue } from "../../api/types";

export interface Column {
  /** "hp:<name>" or "m:<tag>". */
  key: string;
  label: string;
  group: "hparam" | "metric";
  type: "number" | "string" | "bool";
  /** Distinct values (hparams only), for categorical axes. */
  values: HParamValue[];
}

/** Range filter on a number column, value filter on the others (empty: no filter). */
export interface Filter {
  min?: number;
  max?: number;
  /** Substring (case-insensitive) for strings; "true"/"false" for bools. */
  text?: string;
}

export function columns(table: HParamsTable): Column[] {
  return [
    ...table.hparams.map((c): Column => ({ key: `hp:${c.name}`, label: c.name, group: "hparam", type: c.type, values: c.values })),
    ...table.metrics.map((m): Column => ({ key: `m:${m.tag}`, label: m.tag, group: "metric", type: "number", values: [] })),
  ];
}

/** The cell of `row` in column `key`: a number (metrics, numeric hparams), string, bool, or null. */
export function cell(row: HParamsRow, key: string): HParamValue | null {
  if (key === "run") return row.run;
  if (key.startsWith("hp:")) return row.hparams[key.slice(3)] ?? null;
  const m = row.metrics[key.slice(2)];
  return m ? toNumber(m.value) : null;
}

export function passes(value: HParamValue | null, f: Filter | undefined): boolean {
  if (!f) return true;
  const hasRange = f.min !== undefined || f.max !== undefined;
  if (hasRange) {
    if (typeof value !== "number" || Number.isNaN(value)) return false;
    if (f.min !== undefined && value < f.min) return false;
    if (f.max !== undefined && value > f.max) return false;
  }
  const text = f.text?.trim().toLowerCase();
  if (text) {
    if (value === null) return false;
    if (!String(value).toLowerCase().includes(text)) return false;
  }
  return true;
}

export function filterRows(rows: HParamsRow[], filters: Map<string, Filter>): HParamsRow[] {
  return rows.filter((r) => [...filters].every(([key, f]) => passes(cell(r, key), f)));
}

/** Rows sorted by one column; missing and NaN cells go last whatever the direction. */
export function sortRows(rows: HParamsRow[], key: string, dir: 1 | -1): HParamsRow[] {
  const missing = (v: HParamValue | null): boolean => v === null || (typeof v === "number" && Number.isNaN(v));
  return [...rows].sort((a, b) => {
    const va = cell(a, key);
    const vb = cell(b, key);
    if (missing(va) || missing(vb)) return Number(missing(va)) - Number(missing(vb)) || a.run.localeCompare(b.run);
    let c: number;
    if (typeof va === "number" && typeof vb === "number") c = va - vb;
    else c = String(va).localeCompare(String(vb), undefined, { numeric: true });
    return c * dir || a.run.localeCompare(b.run);
  });
}

/** A number field's value, or undefined when empty or not a number. */
export function parseBound(text: string): number | undefined {
  const t = text.trim();
  if (!t) return undefined;
  const v = Number(t);
  return Number.isFinite(v) ? v : undefined;
}
