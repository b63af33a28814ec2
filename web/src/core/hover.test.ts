// @vitest-environment jsdom
import { describe, expect, it } from "vitest";
import { coveredSeries, hoverRows, nearestIndex, tooltipTable, type HoverSource } from "./hover";

describe("nearestIndex", () => {
  it("finds the nearest x in ascending and unsorted series", () => {
    expect(nearestIndex([0, 10, 20, 30], 14)).toBe(1);
    expect(nearestIndex([0, 10, 20, 30], 16)).toBe(2);
    expect(nearestIndex([0, 10, 20, 30], -5)).toBe(0);
    expect(nearestIndex([0, 10, 20, 30], 99)).toBe(3);
    expect(nearestIndex([30, 0, 20, 10], 19)).toBe(2);
    expect(nearestIndex([], 1)).toBe(-1);
    expect(nearestIndex([0, 5, 5, 5, 9], 5)).toBe(1);
  });
});

const series = (label: string, y: number[], raw?: number[]): HoverSource => ({
  label,
  color: "#000",
  x: [0, 1, 2, 3],
  y,
  raw,
  step: [0, 1, 2, 3],
  wallTime: [100, 101, 102, 110],
  firstWallTime: 100,
  axis: 0,
});

describe("hoverRows", () => {
  it("reads each series at the cursor, sorted by value, nearest marked", () => {
    const s = [series("low", [1, 2, 3, 4]), series("high", [5, 6, 7, 8], [5.5, 6.5, 7.5, 9])];
    // pixels: y value * 10, so "low" at step 3 sits at 40 and "high" at 80
    const rows = hoverRows(s, 2.8, (k, i) => [i * 100, ((s[k] as HoverSource).y[i] as number) * 10], 300, 42);
    expect(rows.map((r) => r.label)).toEqual(["high", "low"]);
    const [high, low] = rows;
    expect(high?.value).toBe(9);
    expect(high?.smoothed).toBe(8);
    expect(high?.step).toBe(3);
    expect(high?.relative).toBe(10);
    expect(low?.smoothed).toBeNull();
    expect(low?.nearest).toBe(true);
    expect(high?.nearest).toBe(false);
  });

  it("puts NaN values last", () => {
    const s = [series("nan", [Number.NaN, Number.NaN, Number.NaN, Number.NaN]), series("one", [1, 1, 1, 1])];
    const rows = hoverRows(s, 1, () => [0, 0], 0, 0);
    expect(rows.map((r) => r.label)).toEqual(["one", "nan"]);
  });
});

describe("coveredSeries", () => {
  const xs = [0, 1, 2, 3, 4];
  it("names a series drawn under a later one", () => {
    const m = coveredSeries([xs, xs], [[10, 20, 30, 40, 50], [10.5, 21, 30, 39, 50]]);
    expect([...m]).toEqual([[0, 1]]);
  });
  it("leaves apart series alone, and a later series is never covered by an earlier one", () => {
    expect(coveredSeries([xs, xs], [[10, 20, 30, 40, 50], [60, 70, 80, 90, 100]]).size).toBe(0);
    const m = coveredSeries([xs, xs, xs], [[10, 20, 30, 40, 50], [60, 70, 80, 90, 100], [60, 70, 80, 90, 100]]);
    expect([...m]).toEqual([[1, 2]]);
  });
  it("needs most points close, not one crossing", () => {
    expect(coveredSeries([xs, xs], [[10, 20, 30, 40, 50], [50, 40, 30, 20, 10]]).size).toBe(0);
  });
});

describe("tooltipTable", () => {
  it("has a smoothed column only when smoothing is on", () => {
    const s = [series("a", [1, 2, 3, 4], [1, 2, 3, 5])];
    const rows = hoverRows(s, 3, () => [0, 0], 0, 0);
    const t = tooltipTable(rows, true);
    expect([...t.querySelectorAll("th")].map((e) => e.textContent)).toEqual(["", "run", "value", "smoothed", "step", "relative", "time"]);
    const tr = t.querySelector("tr.tt-row") as HTMLElement;
    expect(tr.dataset.run).toBe("a");
    expect(tr.querySelector(".tt-value")?.textContent).toBe("5");
    expect(tr.querySelector(".tt-relative")?.textContent).toBe("10s");
    expect(tooltipTable(rows, false).querySelector(".tt-smoothed")).toBeNull();
  });
});
