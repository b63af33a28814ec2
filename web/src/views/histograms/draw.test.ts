import { describe, expect, it } from "vitest";
import { recordsShown } from "./draw";

describe("histogram records asked for", () => {
  it("is one record per device pixel row of the top mode's offset", () => {
    expect(recordsShown(1)).toBe(133);
    expect(recordsShown(1.5)).toBe(200); // the server's default (LIMIT in histograms.py)
    expect(recordsShown(2)).toBe(266);
  });
  it("stays between first-and-newest and the old default", () => {
    expect(recordsShown(0.001)).toBe(2);
    expect(recordsShown(10)).toBe(500);
  });
});
