import { describe, expect, it } from "vitest";
import { smoothEma } from "./smoothing";

describe("smoothEma", () => {
  it("returns the input unchanged at weight 0", () => {
    expect(smoothEma([1, 2, 3], 0)).toEqual([1, 2, 3]);
  });
  it("is debiased: the first point equals the first value", () => {
    const out = smoothEma([10, 0, 0], 0.9);
    expect(out[0]).toBeCloseTo(10);
    // second: (0.9*1 + 0) / (1 - 0.81) * ... = 0.9/1.9 * 10
    expect(out[1]).toBeCloseTo((0.9 * 0.1 * 10) / (1 - 0.81));
  });
  it("passes NaN and Inf through without poisoning later points", () => {
    const out = smoothEma([1, Number.NaN, Number.POSITIVE_INFINITY, 1], 0.5);
    expect(Number.isNaN(out[1])).toBe(true);
    expect(out[2]).toBe(Number.POSITIVE_INFINITY);
    expect(out[3]).toBeCloseTo(1);
  });
  it("keeps a constant series constant", () => {
    expect(smoothEma([3, 3, 3], 0.99)).toEqual([3, 3, 3]);
  });
});
