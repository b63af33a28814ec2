// The scope hierarchy of a graph and what is visible for a set of expanded scopes.
// Pure logic (no DOM): the view lays out only what visible() returns.

export interface GraphJson {
  run: string;
  tag: string;
  source: string;
  node_count: number;
  paths: string[];
  ops: string[];
  dtypes: string[];
  shapes: (number[] | null)[];
  inputs: number[][];
  control: number[][];
}

export interface VisibleItem {
  id: string; // "s:<scope path>" or "n:<node index>"
  parent: string | null; // cluster id ("s:<path>") or null at the top
  scope: string | null; // scope path when the item is a collapsed scope
  node: number | null; // node index when the item is an op
}

export interface VisibleEdge {
  from: string;
  to: string;
  count: number;
  control: boolean;
}

export interface Visible {
  items: VisibleItem[];
  clusters: { id: string; path: string; parent: string | null }[];
  edges: VisibleEdge[];
}

// gradient / optimizer nodes by name (MindInsight's convention) or op type
const NOISE_RE = /(^|\/)(gradients?|Gradients?|optimizer|Optimizer)(\/|$)|Backward|_backward|^aten::.*_backward|Grad$/;

export class Hierarchy {
  readonly g: GraphJson;
  readonly children = new Map<string, string[]>(); // scope path -> child ids
  readonly opCount = new Map<string, number>(); // scope path -> ops below it
  readonly signature = new Map<string, string>(); // scope path -> structure signature
  readonly repeats = new Map<string, number>(); // scope path -> identical siblings (incl. itself)
  readonly expanded = new Set<string>();
  private readonly ancestors: string[][] = [];
  private readonly hiddenBelow = new Map<string, number>(); // scope path -> hidden ops below
  hidden: Uint8Array;

  constructor(g: GraphJson) {
    this.g = g;
    this.hidden = new Uint8Array(g.paths.length);
    this.children.set("", []);
    const seen = new Set<string>([""]);
    g.paths.forEach((path, i) => {
      const parts = path.split("/");
      const anc: string[] = [];
      let parent = "";
      for (let k = 1; k < parts.length; k++) {
        const scope = parts.slice(0, k).join("/");
        anc.push(scope);
        if (!seen.has(scope)) {
          seen.add(scope);
          this.children.set(scope, []);
          this.children.get(parent)?.push(`s:${scope}`);
        }
        this.opCount.set(scope, (this.opCount.get(scope) ?? 0) + 1);
        parent = scope;
      }
      this.children.get(parent)?.push(`n:${i}`);
      this.ancestors.push(anc);
    });
    this.computeRepeats();
  }

  /** Mark scopes whose subtrees have the same op structure as a sibling (e.g. 24 layers). */
  private computeRepeats(): void {
    const sig = (scope: string): string => {
      const cached = this.signature.get(scope);
      if (cached !== undefined) return cached;
      const parts = (this.children.get(scope) ?? []).map((c) => (c.startsWith("s:") ? `(${sig(c.slice(2))})` : this.g.ops[Number(c.slice(2))] ?? ""));
      const s = parts.join(",");
      this.signature.set(scope, s);
      return s;
    };
    for (const [scope, kids] of this.children) {
      const groups = new Map<string, string[]>();
      for (const c of kids) {
        if (!c.startsWith("s:")) continue;
        const path = c.slice(2);
        // numbered siblings (layers.0, layers.1, ...) with the same op structure
        const m = /^(.*?)\d+$/.exec(path.slice(path.lastIndexOf("/") + 1));
        const body = sig(path);
        if (!m || !body) continue;
        const key = `${m[1]}|${body}`;
        const list = groups.get(key) ?? [];
        list.push(path);
        groups.set(key, list);
      }
      for (const list of groups.values()) if (list.length > 1) for (const p of list) this.repeats.set(p, list.length);
      void scope;
    }
  }

  /** Hide gradient and optimizer nodes (the "readable" toggle). Returns how many. */
  setReadable(on: boolean): number {
    this.hidden = new Uint8Array(this.g.paths.length);
    this.hiddenBelow.clear();
    if (!on) return 0;
    let n = 0;
    this.g.paths.forEach((p, i) => {
      if (NOISE_RE.test(p) || NOISE_RE.test(this.g.ops[i] ?? "")) {
        this.hidden[i] = 1;
        for (const s of this.ancestors[i] ?? []) this.hiddenBelow.set(s, (this.hiddenBelow.get(s) ?? 0) + 1);
        n++;
      }
    });
    return n;
  }

  /** The visible item that stands for node i: its outermost collapsed scope, or itself. */
  rep(i: number): string {
    for (const scope of this.ancestors[i] ?? []) if (!this.expanded.has(scope)) return `s:${scope}`;
    return `n:${i}`;
  }

  toggle(scope: string): void {
    if (this.expanded.has(scope)) {
      for (const s of [...this.expanded]) if (s === scope || s.startsWith(`${scope}/`)) this.expanded.delete(s);
    } else {
      this.expanded.add(scope);
    }
  }

  /** Expand every scope above node i so that it is visible. */
  expandTo(i: number): void {
    for (const scope of this.ancestors[i] ?? []) this.expanded.add(scope);
  }

  /** Nodes whose path or op matches the regex (throws SyntaxError for a bad one). */
  search(pattern: string, limit = 200): number[] {
    const rx = new RegExp(pattern, "i");
    const out: number[] = [];
    for (let i = 0; i < this.g.paths.length && out.length < limit; i++) {
      if (this.hidden[i]) continue;
      if (rx.test(this.g.paths[i] ?? "") || rx.test(this.g.ops[i] ?? "")) out.push(i);
    }
    return out;
  }

  private scopeVisible(scope: string): boolean {
    return (this.opCount.get(scope) ?? 0) > (this.hiddenBelow.get(scope) ?? 0);
  }

  visible(): Visible {
    const items: VisibleItem[] = [];
    const clusters: Visible["clusters"] = [];
    const anyHidden = this.hiddenBelow.size > 0 || this.hidden.some((v) => v === 1);
    const walk = (scope: string, parent: string | null): void => {
      for (const c of this.children.get(scope) ?? []) {
        if (c.startsWith("s:")) {
          const path = c.slice(2);
          if (anyHidden && !this.scopeVisible(path)) continue;
          if (this.expanded.has(path)) {
            clusters.push({ id: c, path, parent });
            walk(path, c);
          } else {
            items.push({ id: c, parent, scope: path, node: null });
          }
        } else {
          const i = Number(c.slice(2));
          if (!this.hidden[i]) items.push({ id: c, parent, scope: null, node: i });
        }
      }
    };
    walk("", null);
    const edges = new Map<string, VisibleEdge>();
    const add = (from: string, to: string, control: boolean): void => {
      if (from === to) return;
      const key = `${from}\u0000${to}\u0000${control ? 1 : 0}`;
      const e = edges.get(key);
      if (e) e.count++;
      else edges.set(key, { from, to, count: 1, control });
    };
    const reps = this.g.paths.map((_, i) => this.rep(i));
    for (let i = 0; i < reps.length; i++) {
      if (this.hidden[i]) continue;
      const to = reps[i] ?? "";
      for (const j of this.g.inputs[i] ?? []) if (!this.hidden[j]) add(reps[j] ?? "", to, false);
      for (const j of this.g.control[i] ?? []) if (!this.hidden[j]) add(reps[j] ?? "", to, true);
    }
    return { items, clusters, edges: [...edges.values()] };
  }
}

/** "bfloat16[2, 8, 32]" for a node's first output; "" when unknown. */
export function describeOutput(dtype: string, shape: number[] | null): string {
  if (!dtype && !shape) return "";
  return `${dtype}${shape ? `[${shape.join(", ")}]` : ""}`;
}
