import { describe, expect, it } from "vitest";
import { flatten, seededRandom } from "./tsne";
import { fuzzyGraph, kernel, nearest, targetCurve, Umap } from "./umap";

/** `k` tight clusters of `per` points in `d` dimensions, far apart (seeded). */
function clusters(k: number, per: number, d: number): number[][] {
  const rand = seededRandom(11);
  const out: number[][] = [];
  for (let c = 0; c < k; c++) {
    const centre = Array.from({ length: d }, () => (rand() - 0.5) * 40);
    for (let i = 0; i < per; i++) out.push(centre.map((v) => v + (rand() - 0.5)));
  }
  return out;
}

function dist(a: number[], b: number[]): number {
  return Math.hypot(...a.map((v, k) => v - (b[k] as number)));
}

describe("UMAP", () => {
  it("fits its output kernel to the min_dist 0.1 target", () => {
    for (const d of [0.05, 0.3, 0.7, 1, 1.5, 2.5]) expect(Math.abs(kernel(d) - targetCurve(d))).toBeLessThan(0.12);
    expect(kernel(0)).toBe(1);
    expect(kernel(3)).toBeLessThan(0.1);
  });

  it("finds the nearest neighbours, nearest first, never the point itself", () => {
    const { x, n, d } = flatten([[0], [1], [3], [10]]);
    const { index, dist: dd } = nearest(x, n, d, 2);
    expect([...index]).toEqual([1, 2, 0, 2, 1, 0, 2, 1]);
    expect([...dd]).toEqual([1, 3, 1, 2, 2, 3, 7, 9]);
  });

  it("joins the neighbour graphs by fuzzy union, each pair once, weights in (0, 1]", () => {
    const pts = clusters(2, 10, 4);
    const { x, n, d } = flatten(pts);
    const k = 5;
    const { index, dist: dd } = nearest(x, n, d, k);
    const g = fuzzyGraph(index, dd, n, k);
    const seen = new Set<string>();
    for (let e = 0; e < g.weight.length; e++) {
      expect(g.from[e]).toBeLessThan(g.to[e] as number);
      const key = `${g.from[e]}-${g.to[e]}`;
      expect(seen.has(key)).toBe(false);
      seen.add(key);
      expect(g.weight[e]).toBeGreaterThan(0);
      expect(g.weight[e]).toBeLessThanOrEqual(1 + 1e-12);
      // 5 neighbours in clusters of 10: every edge stays inside its cluster
      expect(Math.floor((g.from[e] as number) / 10)).toBe(Math.floor((g.to[e] as number) / 10));
    }
    // each point's nearest neighbour is at membership 1 (distance rho)
    expect(Math.max(...g.weight)).toBeCloseTo(1, 12);
  });

  it("keeps clusters apart in 2-D and 3-D, the same layout for the same seed", () => {
    const pts = clusters(3, 15, 8);
    const label = pts.map((_, i) => Math.floor(i / 15));
    for (const dims of [2, 3]) {
      const { x, n, d } = flatten(pts);
      const run = (seed: number): number[][] => {
        const u = new Umap(x, n, d, { dims, seed, epochs: 200 });
        while (u.epoch < 200) u.step();
        return u.coords();
      };
      const y = run(1);
      expect(y[0]).toHaveLength(dims);
      expect(run(1)).toEqual(y);
      expect(run(2)).not.toEqual(y);
      let within = 0;
      let between = 0;
      let nw = 0;
      let nb = 0;
      for (let i = 0; i < n; i++)
        for (let j = i + 1; j < n; j++) {
          const v = dist(y[i] as number[], y[j] as number[]);
          if (label[i] === label[j]) {
            within += v;
            nw++;
          } else {
            between += v;
            nb++;
          }
        }
      expect(between / nb).toBeGreaterThan((3 * within) / nw);
      for (const row of y) for (const v of row) expect(Number.isFinite(v)).toBe(true);
    }
  });

  it("survives one point and duplicate points", () => {
    const one = new Umap(new Float64Array([1, 2]), 1, 2, { dims: 2 });
    one.step();
    expect(one.coords()).toHaveLength(1);
    const { x, n, d } = flatten([[0, 0], [0, 0], [0, 0], [1, 1]]);
    const u = new Umap(x, n, d, { dims: 2, epochs: 20 });
    while (u.epoch < 20) u.step();
    for (const row of u.coords()) for (const v of row) expect(Number.isFinite(v)).toBe(true);
  });
});
