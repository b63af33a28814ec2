import { afterEach, describe, expect, it, vi } from "vitest";
import { ApiError, buildUrl, concatLists, getJson, getJsonByRuns, mergeSeries, toNumber } from "./client";

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
  it("splits many runs into requests within the limit and merges the answers", async () => {
    const urls: string[] = [];
    vi.stubGlobal(
      "fetch",
      vi.fn(async (url: string) => {
        urls.push(url);
        const runs = new URL(url, "http://x").searchParams.getAll("run");
        return new Response(JSON.stringify({ tag: "t", series: runs.map((run) => ({ run })), missing: [runs[0]] }));
      }),
    );
    const runs = Array.from({ length: 150 }, (_, i) => `run${i}`);
    const body = await getJsonByRuns<{ tag: string; series: { run: string }[]; missing: string[] }>(
      "/api/views/scalars/multi", { tag: "t" }, runs, concatLists("series", "missing"),
    );
    expect(urls.length).toBe(3); // 64 + 64 + 22
    expect(urls.every((u) => new URL(u, "http://x").searchParams.getAll("run").length <= 64)).toBe(true);
    expect(body.series.map((s) => s.run)).toEqual(runs); // every run once, in order
    expect(body.missing).toEqual(["run0", "run64", "run128"]);
    expect(body.tag).toBe("t");
    const few = await getJsonByRuns<{ series: { run: string }[] }>("/api/x", {}, ["a", "b"], mergeSeries);
    expect(few.series.map((s) => s.run)).toEqual(["a", "b"]);
    expect(urls.length).toBe(4); // one request when the runs fit
  });
});
