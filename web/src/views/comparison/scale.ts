// Colour scales of the comparison view. The rule (docs/guide/board.md, "Colours"): a colour
// never says more than the verdict. Cells of passing rows stay white; in warning rows they
// shade towards amber, in error rows towards red, by the metric's "badness" in [0, 1] (where
// the value sits between the best and the worst value of that metric in this comparison, on
// a log scale). The err/budget column is coloured on an absolute scale: within budget white,
// 1000x over budget full strength.
import { toNumber } from "../../api/client";
import type { JsonNumber } from "../../api/types";

export const VERDICT_COLORS: Record<string, string> = { pass: "#2e9e4f", warning: "#e0a000", error: "#d62728" };

/** Metrics that describe one side only: no colour (neither high nor low is worse). */
export const NEUTRAL = new Set(["mean_bench", "std_bench", "mean_target", "std_target"]);

/**
 * How bad `value` is within the comparison's range of `metric`, 0 (best seen) .. 1 (worst seen),
 * on a log scale of the distance from perfect (1 - v for similarities, v for errors).
 * `null`: not coloured (missing, NaN, or a one-sided statistic). Non-finite errors are 1.
 */
export function badness(
  value: JsonNumber | null | undefined,
  metric: string,
  range: [number, number] | null | undefined,
  higherIsBetter: boolean,
): number | null {
  if (value === null || value === undefined || NEUTRAL.has(metric)) return null;
  const v = toNumber(value);
  if (Number.isNaN(v)) return null;
  if (!Number.isFinite(v)) return higherIsBetter ? (v < 0 ? 1 : 0) : v > 0 ? 1 : 0;
  if (!range) return null;
  const dist = (x: number): number => Math.abs(higherIsBetter ? 1 - x : x);
  const d = dist(v);
  const hiD = Math.max(dist(range[0]), dist(range[1]));
  if (!(hiD > 0)) return 0;
  const floor = hiD * 1e-6;
  const loD = Math.max(Math.min(dist(range[0]), dist(range[1])), floor);
  if (hiD <= loD) return d >= hiD ? 1 : 0;
  const b = (Math.log10(Math.max(d, loD)) - Math.log10(loD)) / (Math.log10(hiD) - Math.log10(loD));
  return Math.min(1, Math.max(0, b));
}

/** Largest strength each verdict allows (0: no colour at all). */
export const VERDICT_STRENGTH: Record<string, number> = { pass: 0, warning: 0.55, error: 1 };
const VERDICT_HUE: Record<string, number> = { warning: 40, error: 0 };

/** Cell fill: the row's verdict picks the hue and caps the strength; `b` (badness) shades it. */
export function verdictTint(verdict: string, b: number | null): string {
  const cap = VERDICT_STRENGTH[verdict] ?? 0;
  if (b === null || cap === 0) return "transparent";
  const t = Math.min(1, Math.max(0, b)) * cap;
  if (t === 0) return "transparent";
  const hue = VERDICT_HUE[verdict] ?? 0;
  return `hsl(${hue} 90% ${(97 - 37 * t).toFixed(0)}%)`;
}

/** Badness of an error/budget ratio on an absolute scale: 0 within budget, 1 at 1000x over. */
export function ratioBadness(ratio: JsonNumber | null | undefined): number | null {
  if (ratio === null || ratio === undefined) return null;
  const r = toNumber(ratio);
  if (Number.isNaN(r)) return null;
  if (r <= 1) return 0;
  if (!Number.isFinite(r)) return 1;
  return Math.min(1, Math.max(0.2, Math.log10(r) / 3));
}

/** Module-tree chip for a scope coloured by a metric: pale green for passing scopes. */
export function chipTint(verdict: string, b: number | null): string {
  if (b === null) return "#ddd";
  if ((VERDICT_STRENGTH[verdict] ?? 0) === 0) return "#d9efdf";
  const t = verdictTint(verdict, Math.max(0.25, b));
  return t === "transparent" ? "#d9efdf" : t;
}

/** An error/budget ratio as text ("∞" when the budget is zero). */
export function fmtRatio(value: JsonNumber | null | undefined): string {
  if (value !== null && value !== undefined && toNumber(value) === Number.POSITIVE_INFINITY) return "∞";
  return fmt(value);
}

/** Background colour for a badness value: white .. amber .. red (no verdict cap). */
export function badnessColor(b: number | null): string {
  if (b === null) return "transparent";
  const hue = 48 - 48 * b;
  const light = 98 - 36 * b;
  return `hsl(${hue.toFixed(0)} 95% ${light.toFixed(0)}%)`;
}

/** Colour of a log10 error within [lo, hi] (heatmap cells): pale yellow .. dark red. */
export function heatColor(log: number, lo: number, hi: number): string {
  const t = hi > lo ? Math.min(1, Math.max(0, (log - lo) / (hi - lo))) : 1;
  return `hsl(${(55 - 55 * t).toFixed(0)} 90% ${(92 - 55 * t).toFixed(0)}%)`;
}

/** Compact number: 4 significant digits, exponent outside [1e-3, 1e5). */
export function fmt(value: JsonNumber | null | undefined): string {
  if (value === null || value === undefined) return "–";
  const v = toNumber(value);
  if (Number.isNaN(v)) return "NaN";
  if (!Number.isFinite(v)) return v > 0 ? "+Inf" : "-Inf";
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e5 || a < 1e-3)) return v.toExponential(2);
  return Number(v.toPrecision(4)).toString();
}

/** Cosine-like values close to 1 need more digits to be told apart. */
export function fmtMetric(metric: string, value: JsonNumber | null | undefined): string {
  if (typeof value === "number" && (metric === "cosine" || metric.startsWith("within_")) && value > 0.999 && value < 1 - 1e-9) {
    return value.toFixed(Math.min(10, 2 - Math.floor(Math.log10(1 - value))));
  }
  return fmt(value);
}
