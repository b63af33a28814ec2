/** Threshold highlight: up to two conditions ("> 1", "< 0.5") joined by AND or OR. */

export type Op = ">" | "<";
export interface Condition {
  op: Op;
  value: number;
}
export interface Threshold {
  first: Condition | null;
  second: Condition | null;
  join: "and" | "or";
}

export const EMPTY_THRESHOLD: Threshold = { first: null, second: null, join: "and" };

function test(c: Condition, v: number): boolean {
  return c.op === ">" ? v > c.value : v < c.value;
}

/** True when `v` matches the threshold; false when no condition is set or v is NaN. */
export function matches(t: Threshold, v: number): boolean {
  if (Number.isNaN(v)) return false;
  const conds = [t.first, t.second].filter((c): c is Condition => c !== null);
  if (conds.length === 0) return false;
  return t.join === "and" ? conds.every((c) => test(c, v)) : conds.some((c) => test(c, v));
}

export function isActive(t: Threshold): boolean {
  return t.first !== null || t.second !== null;
}

const KEY = "tensorsight.thresholds";

/** Thresholds are remembered per tag in localStorage. */
export function loadThreshold(tag: string, storage: Storage | undefined = globalThis.localStorage): Threshold {
  try {
    const all = JSON.parse(storage?.getItem(KEY) ?? "{}") as Record<string, Threshold>;
    return all[tag] ?? EMPTY_THRESHOLD;
  } catch {
    return EMPTY_THRESHOLD;
  }
}

export function saveThreshold(tag: string, t: Threshold, storage: Storage | undefined = globalThis.localStorage): void {
  if (!storage) return;
  let all: Record<string, Threshold> = {};
  try {
    all = JSON.parse(storage.getItem(KEY) ?? "{}") as Record<string, Threshold>;
  } catch {
    all = {};
  }
  if (isActive(t)) all[tag] = t;
  else delete all[tag];
  storage.setItem(KEY, JSON.stringify(all));
}

/** Parse "> 1.5" / "<-2" into a condition; null when empty or malformed. */
export function parseCondition(text: string): Condition | null {
  const m = /^\s*([<>])\s*(-?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?)\s*$/i.exec(text);
  if (!m) return null;
  return { op: m[1] as Op, value: Number(m[2]) };
}

export function formatCondition(c: Condition | null): string {
  return c ? `${c.op} ${c.value}` : "";
}
