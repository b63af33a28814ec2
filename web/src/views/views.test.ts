import { describe, expect, it } from "vitest";
import type { HistogramRecordJson, ImageEntry, ScalarSeriesResponse } from "../api/types";
import { decode, heights, xExtent } from "./histograms/draw";
import { positionAtStep } from "./images/index";
import { xValues } from "./scalars/card";

const rec = (step: number, wall: number, edges: HistogramRecordJson["edges"]): HistogramRecordJson => ({
  step,
  wall_time: wall,
  edges,
  counts: edges.slice(1).map(() => 1),
  min: null,
  max: null,
  num: null,
  sum: null,
  nan_count: null,
  pos_inf_count: null,
  neg_inf_count: null,
});

describe("histograms", () => {
  it("decodes y per axis mode and keeps edges exact", () => {
    const records = [rec(10, 100, [-1, 0, 1]), rec(20, 130, [-2, 0, "Infinity"])];
    expect(decode(records, "step").map((r) => r.y)).toEqual([10, 20]);
    expect(decode(records, "relative").map((r) => r.y)).toEqual([0, 30]);
    expect(decode(records, "wall_time").map((r) => r.y)).toEqual([100, 130]);
    expect(decode(records, "step")[1]?.edges).toEqual([-2, 0, Number.POSITIVE_INFINITY]);
  });
  it("takes the x extent over finite edges only", () => {
    expect(xExtent(decode([rec(0, 0, [-2, 0, "Infinity"]), rec(1, 1, [-1, 3])], "step"))).toEqual([-2, 3]);
  });
});

describe("images", () => {
  const img = (i: number, step: number): ImageEntry => ({ i, step, wall_time: 0, index: 0, width: 1, height: 1, mime_type: "image/png" });
  it("finds the last image at or before a step", () => {
    const images = [img(0, 0), img(1, 100), img(2, 200)];
    expect(positionAtStep(images, 150)).toBe(1);
    expect(positionAtStep(images, 200)).toBe(2);
    expect(positionAtStep(images, -5)).toBe(0);
  });
});

describe("scalars", () => {
  it("maps the x axis modes", () => {
    const r = { step: [5, 6], wall_time: [1000, 1010], first_wall_time: 990 } as unknown as ScalarSeriesResponse;
    expect(xValues(r, "step")).toEqual([5, 6]);
    expect(xValues(r, "relative")).toEqual([10, 20]);
    expect(xValues(r, "wall_time")).toEqual([1000, 1010]);
  });
});

describe("histogram heights", () => {
  it("divides by bucket width for density, clipping infinite edges", () => {
    const [r] = decode([rec(0, 0, [-1, 0, 0.5, "Infinity"])], "step");
    expect(heights(r!, "count", -1, 1)).toEqual([1, 1, 1]);
    expect(heights(r!, "density", -1, 1)).toEqual([1, 2, 2]);
  });
});
