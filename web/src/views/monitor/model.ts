// Monitor view, pure parts: the API's shapes, colours per finding kind, geometry, hit tests.
import type { JsonNumber } from "../../api/types";
import { toNumber } from "../../api/client";
import { formatNumber } from "../../core/format";

export interface Finding {
  step: number;
  kind: string;
  source: string;
  where: string;
  tensor: string;
  dtype: string;
  stat: string;
  value: JsonNumber;
  module?: string;
  reference?: JsonNumber | null;
}

export interface Cell extends Finding {
  row: number;
  col: number;
  count: number;
}

export interface Marker {
  step: number;
  count: number;
  worst: string | null;
  loss: JsonNumber | null;
  dump: { step: number; path: string } | null;
}

export interface Heatmap {
  run: string;
  kinds: string[];
  modules: string[];
  first_step: number;
  last_step: number;
  bin: number;
  columns: number;
  checked_steps: number;
  cells: Cell[];
  markers: Marker[];
  loss: { tag: string; steps: number[]; values: JsonNumber[] } | null;
}

export interface StepFindings {
  run: string;
  step: number;
  findings: Finding[];
  truncated: number;
  dump: { step: number; path: string } | null;
  loss: JsonNumber | null;
}

/** Colour of each kind, worst first; a checked cell without findings is CLEAN. */
export const KIND_COLORS: Record<string, string> = {
  nan: "#8b0000",
  overflow: "#e03131",
  inf: "#f08c00",
  underflow: "#1c7ed6",
  dead: "#495057",
  spike: "#e8c600",
};
export const CLEAN = "#e6f2e6";
export const UNKNOWN = "#ae3ec9";

export function kindColor(kind: string | null): string {
  return kind === null ? UNKNOWN : (KIND_COLORS[kind] ?? UNKNOWN);
}

/** The row label of a module path: "" is the model itself. */
export function moduleLabel(path: string): string {
  return path === "" ? "(model)" : path;
}

/** "nan in activation output.0 (float32, amax NaN)" and the like. */
export function describeFinding(f: Finding): string {
  let detail = `${f.stat} ${formatNumber(toNumber(f.value))}`;
  if (f.reference !== undefined && f.reference !== null) detail += `, median ${formatNumber(toNumber(f.reference))}`;
  const what = f.source === "loss" ? "the loss" : `${f.source} ${f.source === "grad" || f.source === "state" ? `'${f.where}' ` : ""}${f.tensor}`;
  return `${f.kind} in ${what} (${f.dtype}, ${detail})`;
}

/** The steps a heat-map column covers. */
export function columnSteps(h: Pick<Heatmap, "first_step" | "last_step" | "bin">, col: number): [number, number] {
  const lo = h.first_step + col * h.bin;
  return [lo, Math.min(h.last_step, lo + h.bin - 1)];
}

/** Which column a step falls in. */
export function columnOf(h: Pick<Heatmap, "first_step" | "bin">, step: number): number {
  return Math.floor((step - h.first_step) / h.bin);
}

/** Rows to draw: every module, or only those with a finding of a shown kind. */
export function visibleRows(h: Heatmap, onlyFlagged: boolean, hidden: ReadonlySet<string>): number[] {
  const rows = h.modules.map((_, i) => i);
  if (!onlyFlagged) return rows;
  const flagged = new Set(h.cells.filter((c) => !hidden.has(c.kind)).map((c) => c.row));
  return rows.filter((r) => flagged.has(r));
}

/** The marker nearest to x (pixels), within `radius`; `xOf` maps a step to x. */
export function nearestMarker(markers: Marker[], x: number, xOf: (step: number) => number, radius = 8): Marker | null {
  let best: Marker | null = null;
  let dist = radius;
  for (const m of markers) {
    const d = Math.abs(xOf(m.step) - x);
    if (d <= dist) {
      dist = d;
      best = m;
    }
  }
  return best;
}

export interface RankRow {
  rank: number;
  run: string;
  findings: number;
  first: (Finding & { module: string }) | null;
  dump: { step: number; path: string } | null;
}

export interface RankCell extends Finding {
  row: number;
  col: number;
  count: number;
  module: string;
}

/** GET /ranks: the ranks of one run's group, one row per rank. */
export interface Ranks {
  run: string;
  group: string;
  kinds: string[];
  ranks: RankRow[];
  first_step: number;
  last_step: number;
  bin: number;
  columns: number;
  cells: RankCell[];
  first: (Finding & { module: string; rank: number; run: string }) | null;
}

/** Whether a run is one rank of a group ("exp/rank3", "rank0"), as watch and the adapters name them. */
export function isRankRun(run: string): boolean {
  return /(^|\/)rank\d+$/.test(run);
}

/** The sentence under the ranks panel: which rank went bad first, where. */
export function firstAcrossRanks(r: Ranks): string {
  const n = r.ranks.length;
  const ranks = `${n} rank${n === 1 ? "" : "s"} of ${r.group}`;
  if (!r.first) return `${ranks}: no findings on any rank.`;
  const f = r.first;
  const bad = r.ranks.filter((x) => x.findings > 0).length;
  return `${ranks}, ${bad} with findings; first: rank ${f.rank} at step ${f.step}, ${f.kind} in ${moduleLabel(f.module)} (${f.source} ${f.tensor}).`;
}
