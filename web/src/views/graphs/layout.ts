// Nested dagre layout: every expanded scope is laid out on its own, bottom-up, and its
// parent sees it as one fixed-size box. Results are cached per scope, so expanding a scope
// lays out that scope, then only its ancestors' (small) levels; collapsing and re-expanding
// reuses the cached layout. An edge that leaves a scope is routed to an exit port at the
// bottom of that scope, continues in the parent level from the scope's box, and enters its
// target's scope through an entry port at the top.
import { Graph, layout } from "@dagrejs/dagre";

export interface Point {
  x: number;
  y: number;
}

export interface Placed {
  x: number; // centre
  y: number;
  width: number;
  height: number;
}

export interface LayoutBox {
  id: string;
  parent: string | null;
  width: number;
  height: number;
}

export interface LayoutCluster {
  id: string;
  parent: string | null;
  minWidth: number; // room for the label
}

export interface LayoutEdge {
  from: string;
  to: string;
}

/** Where everything went, in one coordinate system (top left of the drawing = 0, 0). */
export interface Laid {
  width: number;
  height: number;
  node(id: string): Placed | undefined;
  points(k: number): Point[];
}

const ROOT = "";
const IN = "\u0001in";
const OUT = "\u0001out";
const PAD_TOP = 24; // room for a cluster's label
const PAD_BOTTOM = 6;
const BIG_LEVEL = 150; // boxes in one level above which dagre takes its fast paths

interface Level {
  width: number;
  height: number;
  pos: Map<string, Placed>; // kid id (and ports) -> local centre
  edges: Map<string, Point[]>; // "a\0b" -> local points
}

/**
 * Dagre's initial order (a depth-first walk from the top ranks), without its
 * crossing-minimisation sweeps: on big levels building the sweeps' per-rank graphs alone is a
 * third of dagre's time, and a chain-like level has few crossings to remove.
 */
function depthFirstOrder(g: Graph): void {
  const rank = (v: string): number => (g.node(v) as unknown as { rank: number }).rank;
  const nodes = g.nodes().sort((a, b) => rank(a) - rank(b));
  const next: number[] = [];
  const seen = new Set<string>();
  for (const start of nodes) {
    const stack = [start];
    while (stack.length) {
      const v = stack.pop() ?? "";
      if (seen.has(v)) continue;
      seen.add(v);
      const r = rank(v);
      (g.node(v) as unknown as { order: number }).order = next[r] ?? 0;
      next[r] = (next[r] ?? 0) + 1;
      const succ = g.successors(v) ?? [];
      for (let k = succ.length - 1; k >= 0; k--) if (!seen.has(succ[k] ?? "")) stack.push(succ[k] ?? "");
    }
  }
}

function laySimple(kids: { id: string; width: number; height: number }[], pairs: string[], margin: number): Level {
  const g = new Graph();
  // On big levels (a scope with hundreds of direct ops) two dagre phases dominate:
  // network-simplex ranking and the crossing-minimisation sweeps. A model's big levels are
  // chain-like, where longest-path ranking and the initial (depth-first) order look the same.
  // Dagre's own API takes both choices (`ranker`, `customOrder`).
  const big = kids.length > BIG_LEVEL;
  g.setGraph({ rankdir: "TB", nodesep: 18, ranksep: 34, marginx: margin, marginy: margin, ranker: big ? "longest-path" : "network-simplex" });
  g.setDefaultEdgeLabel(() => ({}));
  for (const k of kids) g.setNode(k.id, { width: k.width, height: k.height });
  for (const p of pairs) {
    const [a, b] = p.split("\u0000") as [string, string];
    if (a === IN || b === OUT) {
      if (!g.hasNode(a)) g.setNode(a, { width: 2, height: 2 });
      if (!g.hasNode(b)) g.setNode(b, { width: 2, height: 2 });
    }
    g.setEdge(a, b);
  }
  layout(g, big ? { customOrder: (lg) => depthFirstOrder(lg as unknown as Graph) } : {});
  const pos = new Map<string, Placed>();
  for (const id of g.nodes()) {
    const n = g.node(id) as unknown as Placed;
    pos.set(id, { x: n.x, y: n.y, width: n.width, height: n.height });
  }
  const edges = new Map<string, Point[]>();
  for (const e of g.edges()) edges.set(`${e.v}\u0000${e.w}`, (g.edge(e) as { points?: Point[] }).points ?? []);
  const gl = g.graph();
  // an empty level (dagre answers -Infinity) is an empty box
  const size = (v: number | undefined): number => (v !== undefined && Number.isFinite(v) ? v : 2 * margin);
  return { width: size(gl.width), height: size(gl.height), pos, edges };
}

export class NestedLayout {
  private readonly cache = new Map<string, { key: string; level: Level }>();
  /** Levels laid out by dagre during the last run (the rest came from the cache). */
  laidOut = 0;

  run(boxes: LayoutBox[], clusters: LayoutCluster[], edges: LayoutEdge[]): Laid {
    const parent = new Map<string, string>();
    const kids = new Map<string, string[]>([[ROOT, []]]);
    const size = new Map<string, { width: number; height: number }>();
    const minWidth = new Map<string, number>();
    for (const c of clusters) {
      kids.set(c.id, []);
      minWidth.set(c.id, c.minWidth);
    }
    for (const c of clusters) {
      parent.set(c.id, c.parent ?? ROOT);
      kids.get(c.parent ?? ROOT)?.push(c.id);
    }
    for (const b of boxes) {
      parent.set(b.id, b.parent ?? ROOT);
      kids.get(b.parent ?? ROOT)?.push(b.id);
      size.set(b.id, { width: b.width, height: b.height });
    }
    // route each edge through the levels between its ends
    const levelPairs = new Map<string, Set<string>>();
    const routes: [string, string][][] = []; // per edge: [level, pair] segments in order
    const chain = (id: string): string[] => {
      const out = [id];
      let p = parent.get(id);
      while (p !== undefined && p !== ROOT) {
        out.push(p);
        p = parent.get(p);
      }
      out.push(ROOT);
      return out;
    };
    const use = (level: string, a: string, b: string, route: [string, string][]): void => {
      const pair = `${a}\u0000${b}`;
      let set = levelPairs.get(level);
      if (!set) levelPairs.set(level, (set = new Set()));
      set.add(pair);
      route.push([level, pair]);
    };
    for (const e of edges) {
      const cu = chain(e.from);
      const cv = chain(e.to);
      let i = cu.length - 1;
      let j = cv.length - 1;
      while (i > 0 && j > 0 && cu[i - 1] === cv[j - 1]) {
        i--;
        j--;
      }
      const route: [string, string][] = [];
      if (i > 0 && j > 0) {
        for (let m = 0; m < i - 1; m++) use(cu[m + 1] ?? ROOT, cu[m] ?? "", OUT, route);
        use(cu[i] ?? ROOT, cu[i - 1] ?? "", cv[j - 1] ?? "", route);
        for (let m = j - 2; m >= 0; m--) use(cv[m + 1] ?? ROOT, IN, cv[m] ?? "", route);
      }
      routes.push(route);
    }
    // lay out bottom-up (a cluster's size is known once its own level is done)
    this.laidOut = 0;
    const levels = new Map<string, Level>();
    const layLevel = (id: string): Level => {
      const ids = kids.get(id) ?? [];
      for (const k of ids) if (kids.has(k)) layLevel(k);
      const items = ids.map((k) => ({ id: k, ...(size.get(k) ?? { width: 10, height: 10 }) }));
      const pairs = [...(levelPairs.get(id) ?? [])].sort();
      const key = `${items.map((k) => `${k.id}:${k.width.toFixed(1)}x${k.height.toFixed(1)}`).join("\u0002")}\u0003${pairs.join("\u0002")}`;
      const hit = this.cache.get(id);
      let level: Level;
      if (hit && hit.key === key) {
        level = hit.level;
      } else {
        level = laySimple(items, pairs, id === ROOT ? 20 : 10);
        this.cache.set(id, { key, level });
        this.laidOut++;
      }
      levels.set(id, level);
      if (id !== ROOT) size.set(id, { width: Math.max(level.width, minWidth.get(id) ?? 0), height: level.height + PAD_TOP + PAD_BOTTOM });
      return level;
    };
    const root = layLevel(ROOT);
    // absolute positions, top-down
    const abs = new Map<string, Placed>();
    const origin = new Map<string, Point>([[ROOT, { x: 0, y: 0 }]]);
    const place = (id: string): void => {
      const level = levels.get(id);
      const o = origin.get(id) ?? { x: 0, y: 0 };
      if (!level) return;
      for (const k of kids.get(id) ?? []) {
        const p = level.pos.get(k);
        const s = size.get(k);
        if (!p || !s) continue;
        // a cluster keeps its own size (its label may make it wider than dagre's box)
        const placed = { x: o.x + p.x, y: o.y + p.y, width: s.width, height: s.height };
        abs.set(k, placed);
        if (kids.has(k)) {
          const inner = levels.get(k);
          const shift = inner ? (s.width - inner.width) / 2 : 0;
          origin.set(k, { x: placed.x - s.width / 2 + shift, y: placed.y - s.height / 2 + PAD_TOP });
          place(k);
        }
      }
    };
    place(ROOT);
    const pointsOf = (k: number): Point[] => {
      const out: Point[] = [];
      for (const [level, pair] of routes[k] ?? []) {
        const o = origin.get(level) ?? { x: 0, y: 0 };
        const pts = levels.get(level)?.edges.get(pair) ?? [];
        const [a, b] = pair.split("\u0000");
        const box = abs.get(level);
        if (a === IN && box) {
          const first = pts[0];
          if (first) out.push({ x: o.x + first.x, y: box.y - box.height / 2 + PAD_TOP - 6 });
        }
        for (const p of pts) out.push({ x: o.x + p.x, y: o.y + p.y });
        if (b === OUT && box) {
          const last = pts[pts.length - 1];
          if (last) out.push({ x: o.x + last.x, y: box.y + box.height / 2 });
        }
      }
      return out;
    };
    return {
      width: root.width,
      height: root.height,
      node: (id) => abs.get(id),
      points: pointsOf,
    };
  }
}
