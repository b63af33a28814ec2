import { describe, expect, it } from "vitest";
import { Latest } from "./latest";

describe("Latest", () => {
  it("drops an older answer that arrives after a newer one", async () => {
    const latest = new Latest();
    const shown: string[] = [];
    const load = async (value: string, delayMs: number): Promise<void> => {
      const ticket = latest.next();
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      if (latest.current(ticket)) shown.push(value);
    };
    await Promise.all([load("slider: step 0, old slice", 30), load("query: -1, 2:5", 5)]);
    expect(shown).toEqual(["query: -1, 2:5"]);
  });
  it("keeps each answer when requests do not overlap", async () => {
    const latest = new Latest();
    const a = latest.next();
    expect(latest.current(a)).toBe(true);
    const b = latest.next();
    expect(latest.current(a)).toBe(false);
    expect(latest.current(b)).toBe(true);
  });
});
