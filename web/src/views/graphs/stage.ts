// An SVG stage with pan (drag) and zoom (wheel), drawing of laid-out boxes, clusters and edges,
// and a flat dagre layout for small graphs (the data-pipeline view).
import { Graph, layout } from "@dagrejs/dagre";
import type { Laid, Placed, Point } from "./layout";

export type { Laid, Placed } from "./layout";

const SVG = "http://www.w3.org/2000/svg";

export interface BoxSpec {
  id: string;
  label: string;
  sub: string;
  cls: string; // CSS class of the box ("op", "scope", "param", "io", "stage", "hit"...)
  parent: string | null;
}

export interface ClusterSpec {
  id: string;
  label: string;
  parent: string | null;
}

export interface EdgeSpec {
  from: string;
  to: string;
  label: string;
  cls: string;
}

export function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number> = {}): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

export function boxWidth(label: string, sub: string): number {
  return Math.min(260, Math.max(70, 7.6 * Math.max(label.length, sub.length * 0.85) + 20));
}

export function boxHeight(sub: string): number {
  return sub ? 38 : 26;
}

/** Lay out boxes, clusters and edges with one compound dagre graph (top to bottom). */
export function runLayout(boxes: BoxSpec[], clusters: ClusterSpec[], edges: EdgeSpec[]): Laid {
  const g = new Graph({ compound: true, multigraph: true });
  // network-simplex ranking is the slow part of dagre on big graphs; longest-path is
  // linear and looks the same on the chain-like graphs a model produces
  const ranker = boxes.length > 150 ? "longest-path" : "network-simplex";
  g.setGraph({ rankdir: "TB", nodesep: 18, ranksep: 34, marginx: 20, marginy: 20, ranker });
  g.setDefaultEdgeLabel(() => ({}));
  for (const c of clusters) g.setNode(c.id, { label: c.label, paddingTop: 22 } as never);
  for (const c of clusters) if (c.parent) g.setParent(c.id, c.parent);
  for (const b of boxes) {
    g.setNode(b.id, { width: boxWidth(b.label, b.sub), height: boxHeight(b.sub) });
    if (b.parent) g.setParent(b.id, b.parent);
  }
  edges.forEach((e, k) => g.setEdge({ v: e.from, w: e.to, name: String(k) }, {}));
  layout(g);
  const gl = g.graph();
  return {
    width: gl.width ?? 0,
    height: gl.height ?? 0,
    node: (id) => (g.hasNode(id) ? (g.node(id) as unknown as Placed) : undefined),
    points: (k) => (g.edge({ v: edges[k]?.from ?? "", w: edges[k]?.to ?? "", name: String(k) }) as { points?: Point[] } | undefined)?.points ?? [],
  };
}

/** Pan/zoom SVG: `root` holds everything drawn; wheel zooms at the cursor, drag pans. */
export class Stage {
  readonly el: SVGSVGElement;
  readonly root: SVGGElement;
  scale = 1;
  tx = 0;
  ty = 0;
  private size = { width: 0, height: 0 };
  /** Called after every pan, zoom or fit (the minimap follows). */
  onView: (() => void) | null = null;

  constructor(host: HTMLElement) {
    this.el = svg("svg", { class: "graph-stage" });
    this.root = svg("g");
    this.el.append(this.root);
    host.append(this.el);
    // the stage's size, kept without asking the browser for a layout on every pan or redraw
    new ResizeObserver((entries) => {
      const r = entries[0]?.contentRect;
      if (r) this.size = { width: r.width, height: r.height };
    }).observe(this.el);
    this.el.addEventListener(
      "wheel",
      (ev) => {
        ev.preventDefault();
        const r = this.el.getBoundingClientRect();
        this.zoomAt(ev.clientX - r.left, ev.clientY - r.top, Math.exp(-ev.deltaY * 0.0015));
      },
      { passive: false },
    );
    let drag: { x: number; y: number } | null = null;
    this.el.addEventListener("mousedown", (ev) => {
      drag = { x: ev.clientX, y: ev.clientY };
    });
    window.addEventListener("mousemove", (ev) => {
      if (!drag) return;
      this.tx += ev.clientX - drag.x;
      this.ty += ev.clientY - drag.y;
      drag = { x: ev.clientX, y: ev.clientY };
      this.apply();
    });
    window.addEventListener("mouseup", () => {
      drag = null;
    });
  }

  zoomAt(px: number, py: number, factor: number): void {
    const s = Math.min(4, Math.max(0.05, this.scale * factor));
    const f = s / this.scale;
    this.tx = px - (px - this.tx) * f;
    this.ty = py - (py - this.ty) * f;
    this.scale = s;
    this.apply();
  }

  apply(): void {
    this.root.setAttribute("transform", `translate(${this.tx},${this.ty}) scale(${this.scale})`);
    this.el.dataset.scale = this.scale.toFixed(3);
    this.onView?.();
  }

  /** The part of the drawing in view, in drawing coordinates. */
  viewBox(): { x: number; y: number; width: number; height: number } {
    const r = this.box();
    return { x: -this.tx / this.scale, y: -this.ty / this.scale, width: (r.width || 800) / this.scale, height: (r.height || 600) / this.scale };
  }

  /** Fit a width x height drawing into the stage (never above 100%). */
  /** The stage's size in CSS pixels. */
  box(): { width: number; height: number } {
    if (!this.size.width) {
      const r = this.el.getBoundingClientRect();
      this.size = { width: r.width, height: r.height };
    }
    return this.size;
  }

  fit(width: number, height: number): void {
    const r = this.box();
    const w = r.width || 800;
    const hgt = r.height || 600;
    this.scale = Math.min(1, (w - 20) / Math.max(width, 1), (hgt - 20) / Math.max(height, 1));
    this.tx = (w - width * this.scale) / 2;
    this.ty = 10;
    this.apply();
  }

  /** Pan (never zoom) so that the top left of a `width`-wide box at (left, top) is in view. */
  showTop(left: number, top: number, width: number): void {
    const r = this.box();
    const sx = this.tx + left * this.scale;
    const sy = this.ty + top * this.scale;
    if (sx >= 0 && sx <= r.width * 0.8 && sy >= 0 && sy <= r.height * 0.8) return;
    const w = width * this.scale;
    // centred when it fits, else its left edge (where the label is) near the left
    this.tx = (w < r.width - 40 ? (r.width - w) / 2 : 20) - left * this.scale;
    this.ty = 30 - top * this.scale;
    this.apply();
  }

  /** Put drawing point (x, y) in the middle of the stage; `zoomIn` makes it readable. */
  centerOn(x: number, y: number, zoomIn = true): void {
    const r = this.box();
    if (zoomIn) this.scale = Math.max(this.scale, 0.8);
    this.tx = (r.width || 800) / 2 - x * this.scale;
    this.ty = (r.height || 600) / 2 - y * this.scale;
    this.apply();
  }
}

/** Draw a laid-out graph into `root`; returns the <g> of each box by id. */
export function draw(
  root: SVGGElement,
  g: Laid,
  boxes: BoxSpec[],
  clusters: ClusterSpec[],
  edges: EdgeSpec[],
): Map<string, SVGGElement> {
  root.replaceChildren();
  const out = new Map<string, SVGGElement>();
  for (const c of clusters) {
    const n = g.node(c.id);
    if (!n) continue;
    const group = svg("g", { class: "cluster", "data-id": c.id });
    group.append(
      svg("rect", { x: n.x - n.width / 2, y: n.y - n.height / 2, width: n.width, height: n.height, rx: 6 }),
    );
    const t = svg("text", { x: n.x - n.width / 2 + 8, y: n.y - n.height / 2 + 14, class: "cluster-label" });
    t.textContent = `− ${c.label}`;
    group.append(t);
    root.append(group);
    out.set(c.id, group);
  }
  edges.forEach((e, k) => {
    const pts = g.points(k);
    if (pts.length < 2) return;
    const d = pts.map((p, i) => `${i ? "L" : "M"}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(" ");
    const path = svg("path", { d, class: `edge ${e.cls}`, "marker-end": "url(#arrow)" });
    if (e.label) {
      const title = svg("title");
      title.textContent = e.label;
      path.append(title);
    }
    root.append(path);
  });
  for (const b of boxes) {
    const n = g.node(b.id);
    if (!n) continue;
    const group = svg("g", { class: `box ${b.cls}`, "data-id": b.id, transform: `translate(${n.x - n.width / 2},${n.y - n.height / 2})` });
    if (b.cls.includes("group")) group.append(svg("rect", { x: 5, y: 5, width: n.width, height: n.height, rx: 8, class: "stack" })); // a stack of blocks
    group.append(svg("rect", { width: n.width, height: n.height, rx: b.cls.includes("scope") ? 8 : 3 }));
    const t = svg("text", { x: 8, y: 16, class: "box-label" });
    t.textContent = b.label.length > 36 ? `${b.label.slice(0, 35)}…` : b.label;
    group.append(t);
    if (b.sub) {
      const s = svg("text", { x: 8, y: 31, class: "box-sub" });
      s.textContent = b.sub.length > 40 ? `${b.sub.slice(0, 39)}…` : b.sub;
      group.append(s);
    }
    root.append(group);
    out.set(b.id, group);
  }
  const defs = svg("defs");
  const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 6, markerHeight: 6, orient: "auto-start-reverse" });
  marker.append(svg("path", { d: "M0,0 L10,5 L0,10 z", class: "arrow" }));
  defs.append(marker);
  root.prepend(defs);
  return out;
}
