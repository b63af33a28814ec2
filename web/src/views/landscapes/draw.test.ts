import { describe, expect, it } from "vitest";
import { colour, extent, fmtRange, grid, levels, marchingSquares, toIndex, type Landscape } from "./draw";
import { mesh } from "./surface";

const bowl = (n: number): Landscape => {
  const ax = Array.from({ length: n }, (_, i) => -1 + (2 * i) / (n - 1));
  return {
    run: "r",
    tag: "t",
    step: 0,
    steps: [0],
    x: ax,
    y: ax,
    values: ax.map((y) => ax.map((x) => x * x + y * y)),
    shape: [n, n],
    downsampled: false,
    min: 0,
    max: 2,
    nan_count: 0,
    path: [[0.5, 0.5, 0.5], [null, 0, 1], [0, 0, 0]],
    metadata: {},
  };
};

describe("landscape contours", () => {
  it("spaces levels strictly inside the range", () => {
    expect(levels(0, 4, 3)).toEqual([1, 2, 3]);
    expect(levels(1, 1, 3)).toEqual([]);
  });
  it("traces a closed iso-line around a bowl's minimum", () => {
    const v = grid(bowl(21), false);
    const segs = marchingSquares(v, 0.5);
    expect(segs.length).toBeGreaterThan(20);
    // every segment end lies on the circle x^2 + y^2 = 0.5 within interpolation error
    for (const s of segs) {
      const x = -1 + (2 * s[0]!) / 20;
      const y = -1 + (2 * s[1]!) / 20;
      expect(Math.abs(x * x + y * y - 0.5)).toBeLessThan(0.02);
    }
  });
  it("skips cells with missing values and handles saddles", () => {
    expect(marchingSquares([[0, Number.NaN], [1, 1]], 0.5)).toEqual([]);
    expect(marchingSquares([[0, 1], [1, 0]], 0.5)).toHaveLength(2);
  });
  it("maps coordinates to fractional indices and takes logs of positive values only", () => {
    expect(toIndex([-1, 0, 1], 0.5)).toBe(1.5);
    expect(toIndex([1, 0, -1], 0.5)).toBe(0.5);
    const ls = bowl(3);
    expect(grid(ls, true)[1]![1]).toBeNaN(); // log10(0)
    expect(extent([[Number.NaN, 2], [3, Number.NaN]])).toEqual([2, 3]);
    expect(colour(0)).toEqual([68, 1, 84]);
    expect(colour(2)).toEqual([253, 231, 37]);
  });
  it("builds two triangles per finite cell and a path without missing points", () => {
    const ls = bowl(5);
    ls.values[0]![0] = null;
    const m = mesh(ls, false);
    expect(m.tris.length / 27).toBe((16 - 1) * 2);
    expect(m.path.length / 9).toBe(2);
  });
});

describe("landscape labels", () => {
  it("formats a narrow range with enough digits to tell its ends apart", () => {
    expect(fmtRange(2.2912, 2.2934)).toEqual(["2.2912", "2.2934"]);
    expect(fmtRange(0.184, 5.1)).toEqual(["0.184", "5.10"]);
  });
});
