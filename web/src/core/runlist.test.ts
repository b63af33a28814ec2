import { describe, expect, it } from "vitest";
import { ROW_HEIGHT, rowWindow } from "./runlist";

describe("rowWindow", () => {
  it("draws the rows in view and a few beyond", () => {
    // 10 rows in view at the top of 1,000: rows 0..10 plus 8 below
    expect(rowWindow(1000, 0, 10 * ROW_HEIGHT)).toEqual([0, 18]);
    // scrolled 100 rows down: 8 above, 10 in view, 8 below
    expect(rowWindow(1000, 100 * ROW_HEIGHT, 10 * ROW_HEIGHT)).toEqual([92, 118]);
  });

  it("stays inside the list at both ends", () => {
    expect(rowWindow(1000, 995 * ROW_HEIGHT, 10 * ROW_HEIGHT)).toEqual([987, 1000]);
    expect(rowWindow(5, 0, 10 * ROW_HEIGHT)).toEqual([0, 5]);
    expect(rowWindow(0, 0, 500)).toEqual([0, 0]);
    // scrolled past the end (the list shrank under the scroll position): an empty window
    expect(rowWindow(10, 5000, 500)).toEqual([10, 10]);
  });

  it("treats a list that starts below the view's top as scrolled to its start", () => {
    expect(rowWindow(1000, -120, 10 * ROW_HEIGHT)).toEqual([0, 16]);
  });
});
