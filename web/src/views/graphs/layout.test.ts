import { describe, expect, it } from "vitest";
import { type LayoutBox, type LayoutCluster, type LayoutEdge, NestedLayout, type Placed } from "./layout";

const box = (id: string, parent: string | null): LayoutBox => ({ id, parent, width: 80, height: 30 });

// top: a -> [S: b -> [T: c -> d] -> e] -> f, plus a -> d (enters two scopes) and d -> f (leaves two)
function scene(): { boxes: LayoutBox[]; clusters: LayoutCluster[]; edges: LayoutEdge[] } {
  return {
    boxes: [box("a", null), box("b", "S"), box("c", "T"), box("d", "T"), box("e", "S"), box("f", null)],
    clusters: [
      { id: "S", parent: null, minWidth: 40 },
      { id: "T", parent: "S", minWidth: 400 },
    ],
    edges: [
      { from: "a", to: "b" },
      { from: "b", to: "c" },
      { from: "c", to: "d" },
      { from: "d", to: "e" },
      { from: "e", to: "f" },
      { from: "a", to: "d" },
      { from: "d", to: "f" },
    ],
  };
}

function inside(inner: Placed, outer: Placed): boolean {
  const eps = 0.5;
  return (
    inner.x - inner.width / 2 >= outer.x - outer.width / 2 - eps &&
    inner.x + inner.width / 2 <= outer.x + outer.width / 2 + eps &&
    inner.y - inner.height / 2 >= outer.y - outer.height / 2 - eps &&
    inner.y + inner.height / 2 <= outer.y + outer.height / 2 + eps
  );
}

describe("nested layout", () => {
  it("places every box inside its scope and scopes inside theirs", () => {
    const { boxes, clusters, edges } = scene();
    const laid = new NestedLayout().run(boxes, clusters, edges);
    const at = (id: string): Placed => {
      const p = laid.node(id);
      if (!p) throw new Error(`no position for ${id}`);
      return p;
    };
    expect(inside(at("c"), at("T"))).toBe(true);
    expect(inside(at("d"), at("T"))).toBe(true);
    expect(inside(at("b"), at("S"))).toBe(true);
    expect(inside(at("T"), at("S"))).toBe(true);
    expect(inside(at("a"), at("S"))).toBe(false);
    expect(at("T").width).toBeGreaterThanOrEqual(400); // room for a long label
    expect(at("a").y).toBeLessThan(at("S").y - at("S").height / 2);
    expect(at("f").y).toBeGreaterThan(at("S").y + at("S").height / 2);
    expect(laid.width).toBeGreaterThan(at("S").width);
  });
  it("routes an edge across scope borders from its source box to its target box", () => {
    const { boxes, clusters, edges } = scene();
    const laid = new NestedLayout().run(boxes, clusters, edges);
    const near = (p: { x: number; y: number } | undefined, b: Placed | undefined): boolean =>
      !!p && !!b && Math.abs(p.x - b.x) <= b.width / 2 + 1 && Math.abs(p.y - b.y) <= b.height / 2 + 1;
    for (let k = 0; k < edges.length; k++) {
      const pts = laid.points(k);
      expect(pts.length).toBeGreaterThanOrEqual(2);
      expect(near(pts[0], laid.node(edges[k]?.from ?? ""))).toBe(true);
      expect(near(pts[pts.length - 1], laid.node(edges[k]?.to ?? ""))).toBe(true);
    }
    // a -> d passes the top border of S, then of T, going down
    const ad = laid.points(5).map((p) => p.y);
    const s = laid.node("S");
    const t = laid.node("T");
    if (!s || !t) throw new Error("no scopes");
    expect(ad.some((y) => y < s.y - s.height / 2)).toBe(true);
    expect(ad.some((y) => y > s.y - s.height / 2 && y < t.y - t.height / 2 + 30)).toBe(true);
  });
  it("lays out only the levels that changed", () => {
    const layout = new NestedLayout();
    const { boxes, clusters, edges } = scene();
    layout.run(boxes, clusters, edges);
    expect(layout.laidOut).toBe(3); // T, S and the top
    const again = layout.run(boxes, clusters, edges);
    expect(layout.laidOut).toBe(0);
    expect(again.node("c")).toBeDefined();
    // a new box at the top: only the top level is laid out again
    layout.run([...boxes, box("g", null)], clusters, [...edges, { from: "f", to: "g" }]);
    expect(layout.laidOut).toBe(1);
  });
  it("gives an empty scope a finite size", () => {
    const laid = new NestedLayout().run([box("a", null)], [{ id: "E", parent: null, minWidth: 50 }], []);
    const e = laid.node("E");
    expect(e && Number.isFinite(e.width) && Number.isFinite(e.height) && Number.isFinite(e.x)).toBe(true);
    expect(Number.isFinite(laid.width)).toBe(true);
  });
  it("lays out a level with hundreds of ops (dagre's fast paths) without overlaps", () => {
    const n = 400;
    const boxes = Array.from({ length: n }, (_, i) => box(`n${i}`, "S"));
    const edges = Array.from({ length: n - 1 }, (_, i) => ({ from: `n${i}`, to: `n${i + 1}` }));
    for (let i = 4; i < n; i += 5) edges.push({ from: `n${i - 4}`, to: `n${i}` }); // residuals
    const laid = new NestedLayout().run(boxes, [{ id: "S", parent: null, minWidth: 10 }], edges);
    const ys = boxes.map((b) => laid.node(b.id)?.y ?? Number.NaN);
    for (let i = 1; i < n; i++) expect(ys[i] ?? 0).toBeGreaterThan(ys[i - 1] ?? 0); // top to bottom
  });
});
