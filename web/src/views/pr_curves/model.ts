// Pure helpers of the PR curves view: the union of steps, the point nearest a threshold.
import { toNumber } from "../../api/client";
import type { JsonNumber } from "../../api/types";

export interface PrCurveResponse {
  run: string;
  step: number;
  wall_time: number;
  steps: number[];
  num_thresholds: number;
  downsampled: boolean;
  thresholds: JsonNumber[];
  precision: JsonNumber[];
  recall: JsonNumber[];
  true_positives: JsonNumber[];
  false_positives: JsonNumber[];
  true_negatives: JsonNumber[];
  false_negatives: JsonNumber[];
}

export interface PrCurvesResponse {
  tag: string;
  curves: PrCurveResponse[];
  missing: string[];
}

/** A curve with its arrays decoded to numbers. */
export interface Curve {
  run: string;
  step: number;
  steps: number[];
  thresholds: number[];
  precision: number[];
  recall: number[];
  tp: number[];
  fp: number[];
  tn: number[];
  fn: number[];
}

export function decodeCurve(c: PrCurveResponse): Curve {
  return {
    run: c.run,
    step: c.step,
    steps: c.steps,
    thresholds: c.thresholds.map(toNumber),
    precision: c.precision.map(toNumber),
    recall: c.recall.map(toNumber),
    tp: c.true_positives.map(toNumber),
    fp: c.false_positives.map(toNumber),
    tn: c.true_negatives.map(toNumber),
    fn: c.false_negatives.map(toNumber),
  };
}

/** Every step of the given curves, ascending, without duplicates. */
export function unionSteps(curves: { steps: number[] }[]): number[] {
  const all = new Set<number>();
  for (const c of curves) for (const s of c.steps) all.add(s);
  return [...all].sort((a, b) => a - b);
}

/** Index of the threshold nearest `t` (first of ties); -1 when there is none. */
export function thresholdIndex(thresholds: number[], t: number): number {
  let best = -1;
  let bestD = Infinity;
  thresholds.forEach((v, i) => {
    const d = Math.abs(v - t);
    if (d < bestD) {
      bestD = d;
      best = i;
    }
  });
  return best;
}
