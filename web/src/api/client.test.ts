import { afterEach, describe, expect, it, vi } from "vitest";
import { ApiError, buildUrl, getJson, toNumber } from "./client";

describe("client", () => {
  afterEach(() => vi.unstubAllGlobals());

  it("builds query strings with repeated keys and skips empty values", () => {
    expect(buildUrl("/api/x", { run: ["a", "b c"], tag: "t/1", xmin: undefined, w: 5 })).toBe("/api/x?run=a&run=b+c&tag=t%2F1&w=5");
    expect(buildUrl("/api/x")).toBe("/api/x");
  });
  it("decodes non-finite numbers", () => {
    expect(toNumber("Infinity")).toBe(Number.POSITIVE_INFINITY);
    expect(toNumber("-Infinity")).toBe(Number.NEGATIVE_INFINITY);
    expect(Number.isNaN(toNumber("NaN"))).toBe(true);
    expect(Number.isNaN(toNumber(null))).toBe(true);
    expect(toNumber(1.5)).toBe(1.5);
  });
  it("turns an error body into ApiError", async () => {
    vi.stubGlobal(
      "fetch",
      vi.fn(async () => new Response(JSON.stringify({ error: { code: "not_found", message: "Run 'x' does not exist." } }), { status: 404 })),
    );
    await expect(getJson("/api/views/scalars/series")).rejects.toEqual(new ApiError(404, "not_found", "Run 'x' does not exist."));
  });
});
