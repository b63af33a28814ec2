import { describe, expect, it } from "vitest";
import {
  categorize,
  CATEGORY_COLORS,
  defaultColorColumn,
  depthOrder,
  fitScreen,
  hitTest,
  matchLabels,
  OTHER_COLOR,
  pointLabels,
  radiusOf,
  rotate,
  spriteCell,
  toScreen,
  varianceText,
} from "./model";

describe("embeddings model", () => {
  it("colours the most frequent values and folds the rest into (other)", () => {
    const c = categorize(["b", "a", "b", "c"]);
    expect(c.legend.map((e) => [e.value, e.count])).toEqual([["b", 2], ["a", 1], ["c", 1]]);
    expect(c.colors).toEqual([CATEGORY_COLORS[0], CATEGORY_COLORS[1], CATEGORY_COLORS[0], CATEGORY_COLORS[2]]);
    const many = categorize(["x", "x", "y", "z", "w"], 3);
    expect(many.legend.map((e) => e.value)).toEqual(["x", "y", "(other)"]);
    expect(many.legend[2]?.count).toBe(2);
    expect(many.colors.slice(3)).toEqual([OTHER_COLOR, OTHER_COLOR]);
  });
  it("colours by the first column with a few distinct values", () => {
    const rows = [["p0", "cat"], ["p1", "dog"], ["p2", "cat"]];
    expect(defaultColorColumn(["name", "class"], rows)).toBe(0);
    const unique = Array.from({ length: 30 }, (_, i) => [`p${i}`, i % 2 ? "a" : "b"]);
    expect(defaultColorColumn(["name", "class"], unique)).toBe(1);
    expect(defaultColorColumn(["name"], [["same"], ["same"]])).toBe(-1);
  });
  it("matches labels by case-insensitive regex, or as text when the regex is invalid", () => {
    expect(matchLabels(["Cat", "dog", "cat(1)"], "^cat")).toEqual([true, false, true]);
    expect(matchLabels(["a(b", "ab"], "a(")).toEqual([true, false]);
    expect(matchLabels(["a"], "  ")).toEqual([false]);
  });
  it("labels points by a column or their index", () => {
    const p = { indices: [4, 9], metadata: [["x", "1"], ["y", "2"]] };
    expect(pointLabels(p, 1)).toEqual(["1", "2"]);
    expect(pointLabels({ indices: [4, 9], metadata: [] }, 0)).toEqual(["#4", "#9"]);
  });
  it("rotates around y then x and keeps 2-D points flat", () => {
    const r = rotate([[1, 0, 0]], Math.PI / 2, 0);
    expect(r[0]).toBeCloseTo(0);
    expect(r[2]).toBeCloseTo(-1);
    const p = rotate([[0, 1, 0]], 0, Math.PI / 2);
    expect(p[1]).toBeCloseTo(0);
    expect(p[2]).toBeCloseTo(1);
    expect([...rotate([[2, 3]], 0, 0)]).toEqual([2, 3, 0]);
    expect(radiusOf([[3, 4, 0], [1, 0, 0]])).toBe(5);
  });
  it("fits points into the box with one scale, y up, and finds the nearest", () => {
    const flat = rotate([[-1, -1], [1, 1], [1, -1]], 0, 0);
    const m = fitScreen(flat, 220, 120, 10);
    expect(m.scale).toBe(50); // the height (100 px for a span of 2) limits the scale
    expect(toScreen(flat, 0, m)).toEqual([60, 110]);
    expect(toScreen(flat, 1, m)).toEqual([160, 10]);
    expect(hitTest(flat, m, 158, 12, 5)).toBe(1);
    expect(hitTest(flat, m, 110, 60, 5)).toBe(-1);
    const fixed = fitScreen(flat, 220, 120, 10, 4); // 3-D: the radius sets the scale
    expect(fixed.scale).toBe(12.5);
    expect(fixed.cx).toBe(110);
  });
  it("draws back to front and prefers the front point on a hit tie", () => {
    const flat = new Float64Array([0, 0, 1, 0, 0, -1, 5, 5, 0]);
    expect(depthOrder(flat)).toEqual([1, 2, 0]);
    const m = { scale: 1, cx: 0, cy: 0 };
    expect(hitTest(flat, m, 0, 0, 3)).toBe(0);
    const back = new Float64Array([0, 0, -1, 0, 0, 1]);
    expect(hitTest(back, m, 0, 0, 3)).toBe(1);
  });
  it("finds a thumbnail in the sprite grid and writes the variance", () => {
    expect(spriteCell(7, 20, [8, 6])).toEqual({ x: 16, y: 6, columns: 5 });
    expect(varianceText([0.62, 0.2134])).toBe("PC1 62.0% · PC2 21.3%");
  });
});

describe("numeric colour scale and 2-D zoom", () => {
  it("gives a numeric column with many values a continuous scale, few values a legend", async () => {
    const { numericScale, numericValues, scaleColor, NO_VALUE_COLOR } = await import("./model");
    const values = Array.from({ length: 30 }, (_, i) => String(i * 0.5));
    values[3] = "";
    const s = numericScale(values);
    expect(s).not.toBeNull();
    expect(s?.min).toBe(0);
    expect(s?.max).toBe(14.5);
    expect(s?.colors[0]).toBe(scaleColor(0));
    expect(s?.colors[29]).toBe(scaleColor(1));
    expect(s?.colors[3]).toBe(NO_VALUE_COLOR);
    expect(numericScale(["1", "2", "3", "2"])).toBeNull(); // 3 values: categories
    expect(numericScale([...values.slice(0, 25), "cat"])).toBeNull(); // not all numbers
    expect(numericValues(["1e3", " -2 ", "Infinity"])).toBeNull();
    expect(numericValues(["1e3", " -2 "])).toEqual([1000, -2]);
    expect(scaleColor(0)).toBe("rgb(68, 1, 84)");
    expect(scaleColor(1)).toBe("rgb(253, 231, 37)");
    expect(scaleColor(2)).toBe(scaleColor(1)); // clamped
  });

  it("zooms about the cursor and pans on top of the fitted map", async () => {
    const { applyView, zoomAt, FITTED, MAX_ZOOM } = await import("./model");
    const base = { scale: 10, cx: 200, cy: 150 };
    expect(applyView(base, FITTED, 400, 300)).toEqual(base);
    // the data point under the cursor stays under it
    const px = 320, py = 90;
    const dataX = (px - base.cx) / base.scale, dataY = (base.cy - py) / base.scale;
    let v = zoomAt(FITTED, 2, px, py, 400, 300);
    v = zoomAt(v, 1.5, px, py, 400, 300);
    const m = applyView(base, v, 400, 300);
    expect(m.scale).toBeCloseTo(30, 9);
    expect(m.cx + dataX * m.scale).toBeCloseTo(px, 9);
    expect(m.cy - dataY * m.scale).toBeCloseTo(py, 9);
    // a pan shifts everything by the drag
    const moved = applyView(base, { ...v, dx: v.dx + 15, dy: v.dy - 5 }, 400, 300);
    expect(moved.cx - m.cx).toBeCloseTo(15, 9);
    expect(moved.cy - m.cy).toBeCloseTo(-5, 9);
    expect(zoomAt(FITTED, 1e9, 0, 0, 400, 300).zoom).toBe(MAX_ZOOM);
  });
});
