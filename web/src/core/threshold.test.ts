import { describe, expect, it } from "vitest";
import { loadThreshold, matches, parseCondition, saveThreshold, type Threshold } from "./threshold";

class MemoryStorage {
  private data = new Map<string, string>();
  get length(): number {
    return this.data.size;
  }
  clear(): void {
    this.data.clear();
  }
  getItem(k: string): string | null {
    return this.data.get(k) ?? null;
  }
  key(i: number): string | null {
    return [...this.data.keys()][i] ?? null;
  }
  removeItem(k: string): void {
    this.data.delete(k);
  }
  setItem(k: string, v: string): void {
    this.data.set(k, v);
  }
}

describe("threshold", () => {
  it("parses conditions and refuses garbage", () => {
    expect(parseCondition("> 1.5")).toEqual({ op: ">", value: 1.5 });
    expect(parseCondition("<-2e-3")).toEqual({ op: "<", value: -0.002 });
    expect(parseCondition("= 3")).toBeNull();
    expect(parseCondition("> abc")).toBeNull();
    expect(parseCondition("")).toBeNull();
  });
  it("joins two conditions with AND or OR", () => {
    const and: Threshold = { first: { op: ">", value: 0 }, second: { op: "<", value: 1 }, join: "and" };
    expect(matches(and, 0.5)).toBe(true);
    expect(matches(and, 2)).toBe(false);
    const or: Threshold = { ...and, first: { op: ">", value: 5 }, join: "or" };
    expect(matches(or, 0.5)).toBe(true);
    expect(matches(or, 6)).toBe(true);
    expect(matches(or, 3)).toBe(false);
  });
  it("never matches NaN, matches infinities by comparison", () => {
    const t: Threshold = { first: { op: ">", value: 1 }, second: null, join: "and" };
    expect(matches(t, Number.NaN)).toBe(false);
    expect(matches(t, Number.POSITIVE_INFINITY)).toBe(true);
    expect(matches({ first: null, second: null, join: "or" }, 5)).toBe(false);
  });
  it("is remembered per tag", () => {
    const storage = new MemoryStorage() as unknown as Storage;
    const t: Threshold = { first: { op: "<", value: 0.1 }, second: null, join: "or" };
    saveThreshold("loss", t, storage);
    expect(loadThreshold("loss", storage)).toEqual(t);
    expect(loadThreshold("acc", storage).first).toBeNull();
    storage.setItem("tensorsight.thresholds", "{not json");
    expect(loadThreshold("loss", storage).first).toBeNull();
  });
});
