import { describe, expect, it } from "vitest";
import { affinities, flatten, seededRandom, squaredDistances, Tsne } from "./tsne";

/** `k` tight clusters of `per` points in `d` dimensions, far apart (seeded). */
function clusters(k: number, per: number, d: number): number[][] {
  const rand = seededRandom(7);
  const out: number[][] = [];
  for (let c = 0; c < k; c++) {
    const centre = Array.from({ length: d }, () => (rand() - 0.5) * 40);
    for (let i = 0; i < per; i++) out.push(centre.map((v) => v + (rand() - 0.5)));
  }
  return out;
}

describe("t-SNE", () => {
  it("matches the perplexity and makes P symmetric, summing to 1", () => {
    const pts = clusters(2, 15, 5);
    const { x, n, d } = flatten(pts);
    const p = affinities(squaredDistances(x, n, d), n, 5);
    let total = 0;
    for (let i = 0; i < n; i++) {
      expect(p[i * n + i]).toBe(0);
      for (let j = 0; j < n; j++) {
        expect(p[i * n + j]).toBeCloseTo(p[j * n + i] as number, 12);
        total += p[i * n + j] as number;
      }
    }
    expect(total).toBeCloseTo(1, 6);
    // the mass of each point stays within its own cluster
    let inside = 0;
    for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) if ((i < 15) === (j < 15)) inside += p[i * n + j] as number;
    expect(inside).toBeGreaterThan(0.99);
  });

  it("keeps clusters apart in 2-D and 3-D, the same layout for the same seed", () => {
    const pts = clusters(3, 12, 10);
    const label = pts.map((_, i) => Math.floor(i / 12));
    for (const dims of [2, 3]) {
      const { x, n, d } = flatten(pts);
      const run = (): number[][] => {
        const t = new Tsne(x, n, d, { dims, perplexity: 8, seed: 3 });
        let first = 0;
        let last = 0;
        for (let i = 0; i < 300; i++) {
          const c = t.step();
          if (i === 120) first = c;
          last = c;
        }
        expect(last).toBeLessThan(first); // the cost falls once the exaggeration is over
        expect(t.iteration).toBe(300);
        return t.coords();
      };
      const y = run();
      expect(y[0]).toHaveLength(dims);
      expect(run()).toEqual(y);
      // every point is nearer its own cluster's mean than any other cluster's
      const means = [0, 1, 2].map((c) => {
        const rows = y.filter((_, i) => label[i] === c);
        return Array.from({ length: dims }, (_, k) => rows.reduce((s, r) => s + (r[k] as number), 0) / rows.length);
      });
      y.forEach((row, i) => {
        const dist = means.map((m) => Math.hypot(...m.map((v, k) => v - (row[k] as number))));
        expect(dist.indexOf(Math.min(...dist))).toBe(label[i]);
      });
    }
  });
});
