import { describe, expect, it } from "vitest";
import { decodeCurve, thresholdIndex, unionSteps } from "./model";

describe("pr curves model", () => {
  it("unions steps in order", () => {
    expect(unionSteps([{ steps: [5, 1] }, { steps: [1, 3] }])).toEqual([1, 3, 5]);
    expect(unionSteps([])).toEqual([]);
  });
  it("finds the nearest threshold", () => {
    expect(thresholdIndex([0, 0.25, 0.5, 0.75, 1], 0.6)).toBe(2);
    expect(thresholdIndex([0, 0.5, 1], 0.25)).toBe(0);
    expect(thresholdIndex([], 0.5)).toBe(-1);
  });
  it("decodes non-finite numbers", () => {
    const c = decodeCurve({
      run: "r", step: 1, wall_time: 0, steps: [1], num_thresholds: 1, downsampled: false,
      thresholds: [0], precision: ["NaN"], recall: [1], true_positives: [1], false_positives: [0],
      true_negatives: [0], false_negatives: [0],
    });
    expect(Number.isNaN(c.precision[0])).toBe(true);
    expect(c.tp).toEqual([1]);
  });
});
