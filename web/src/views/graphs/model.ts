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
  auxiliary: number[]; // nodes the readable toggle hides (gradient/optimizer; see docs/http_api/graphs.md)
  error?: string; // why a graph file could not be read (no nodes then)
}

export interface VisibleItem {
  id: string; // "s:<scope path>", "n:<node index>" or "g:<first member's path>"
  parent: string | null; // cluster id ("s:<path>") or null at the top
  scope: string | null; // scope path when the item is a collapsed scope
  node: number | null; // node index when the item is an op
  group: string | null; // group id when the item is a folded group of identical scopes
}

/** Numbered sibling scopes with the same op structure (e.g. 24 transformer layers). */
export interface RepeatGroup {
  id: string; // "g:<first member's path>"
  parent: string; // the scope holding them ("" at the top)
  members: string[]; // scope paths, in graph order
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

// parameters, buffers and constants: drawn inside their only consumer (see inlineInputs)
const INLINE_OPS = new Set(["Parameter", "Buffer", "Constant", "Const"]);


export class Hierarchy {
  readonly g: GraphJson;
  readonly children = new Map<string, string[]>(); // scope path -> child ids
  readonly opCount = new Map<string, number>(); // scope path -> ops below it
  readonly signature = new Map<string, string>(); // scope path -> structure signature
  readonly repeats = new Map<string, number>(); // scope path -> identical siblings (incl. itself)
  readonly groups = new Map<string, RepeatGroup>(); // group id -> group
  readonly memberOf = new Map<string, string>(); // scope path -> group id
  readonly folded = new Set<string>(); // group ids shown as one box (all of them at first)
  readonly expanded = new Set<string>();
  private readonly ancestors: string[][] = [];
  private readonly hiddenBelow = new Map<string, number>(); // scope path -> hidden ops below
  hidden: Uint8Array;
  /** Consumer a parameter/constant is drawn inside (-1: drawn as its own box); see inlineInputs. */
  readonly inlineInto: Int32Array;
  /** How many parameters/constants are drawn inside each node. */
  readonly inlined: Uint16Array;

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
    this.inlineInto = new Int32Array(g.paths.length).fill(-1);
    this.inlined = new Uint16Array(g.paths.length);
    this.inlineInputs();
  }

  /**
   * Mark scopes whose subtrees have the same op structure as a numbered sibling (`repeats`),
   * and fold each set of such siblings (24 transformer layers, 8 parallel heads) into one
   * group, unless data flows from one of them through another sibling into another of them
   * (norm1 -> attn -> norm2): one box for both would draw a cycle.
   */
  private computeRepeats(): void {
    const sig = (scope: string): string => {
      const cached = this.signature.get(scope);
      if (cached !== undefined) return cached;
      const parts = (this.children.get(scope) ?? []).map((c) => (c.startsWith("s:") ? `(${sig(c.slice(2))})` : this.g.ops[Number(c.slice(2))] ?? ""));
      const s = parts.join(",");
      this.signature.set(scope, s);
      return s;
    };
    const candidates: { parent: string; members: string[] }[] = [];
    for (const [scope, kids] of this.children) {
      const same = new Map<string, string[]>(); // key -> identical siblings
      for (const c of kids) {
        if (!c.startsWith("s:")) continue;
        const path = c.slice(2);
        // numbered siblings (layers.0, layers.1, ...) with the same op structure
        const m = /^(.*?)\d+$/.exec(path.slice(path.lastIndexOf("/") + 1));
        const body = sig(path);
        if (!m || !body) continue;
        const key = `${m[1]}|${body}`;
        const list = same.get(key) ?? [];
        list.push(path);
        same.set(key, list);
      }
      for (const list of same.values()) {
        if (list.length < 2) continue;
        for (const p of list) this.repeats.set(p, list.length);
        candidates.push({ parent: scope, members: list });
      }
    }
    const siblings = this.siblingEdges(new Set(candidates.map((c) => c.parent)));
    for (const { parent, members } of candidates) {
      if (this.foldingMakesCycle(siblings.get(parent), members)) continue;
      const id = `g:${members[0] ?? ""}`;
      this.groups.set(id, { id, parent, members });
      this.folded.add(id);
      for (const p of members) this.memberOf.set(p, id);
    }
  }

  /** For each scope in `parents`: which of its children feed which (one pass over the edges). */
  private siblingEdges(parents: Set<string>): Map<string, Map<string, Set<string>>> {
    const out = new Map<string, Map<string, Set<string>>>();
    if (!parents.size) return out;
    const child = (i: number, depth: number): string => {
      const a = this.ancestors[i] ?? [];
      return depth < a.length ? `s:${a[depth] ?? ""}` : `n:${i}`;
    };
    const add = (j: number, i: number): void => {
      const a = this.ancestors[j] ?? [];
      const b = this.ancestors[i] ?? [];
      let d = 0;
      while (d < a.length && d < b.length && a[d] === b[d]) d++;
      const parent = d === 0 ? "" : (a[d - 1] ?? "");
      if (!parents.has(parent)) return;
      const from = child(j, d);
      const to = child(i, d);
      if (from === to) return;
      let adj = out.get(parent);
      if (!adj) out.set(parent, (adj = new Map()));
      let set = adj.get(from);
      if (!set) adj.set(from, (set = new Set()));
      set.add(to);
    };
    this.g.inputs.forEach((ins, i) => {
      for (const j of ins) add(j, i);
    });
    this.g.control.forEach((ins, i) => {
      for (const j of ins) add(j, i);
    });
    return out;
  }

  /**
   * Whether one box for `members` would sit on a cycle: some sibling that is no member is fed
   * by a member and (through other siblings) feeds a member, as attn between norm1 and norm2.
   */
  private foldingMakesCycle(adj: Map<string, Set<string>> | undefined, members: string[]): boolean {
    if (!adj) return false;
    const mem = new Set(members.map((m) => `s:${m}`));
    const stack: string[] = [];
    for (const m of mem) for (const x of adj.get(m) ?? []) if (!mem.has(x)) stack.push(x);
    const seen = new Set<string>();
    while (stack.length) {
      const x = stack.pop() ?? "";
      if (seen.has(x)) continue;
      seen.add(x);
      for (const y of adj.get(x) ?? []) {
        if (mem.has(y)) return true;
        if (!seen.has(y)) stack.push(y);
      }
    }
    return false;
  }

  /**
   * A parameter, buffer or constant that feeds exactly one op of its own scope is drawn inside
   * that op (listed in its panel) instead of as a box of its own: it says nothing the consumer's
   * panel does not, and a transformer layer has one per linear layer.
   */
  private inlineInputs(): void {
    const n = this.g.paths.length;
    const consumer = new Int32Array(n).fill(-1); // -1 none, -2 several
    this.g.inputs.forEach((ins, i) => {
      for (const j of ins) consumer[j] = consumer[j] === -1 || consumer[j] === i ? i : -2;
    });
    this.g.control.forEach((ins) => {
      for (const j of ins) consumer[j] = -2;
    });
    const parentOf = (i: number): string => {
      const a = this.ancestors[i] ?? [];
      return a[a.length - 1] ?? "";
    };
    for (let j = 0; j < n; j++) {
      const i = consumer[j] ?? -1;
      if (i < 0 || !INLINE_OPS.has(this.g.ops[j] ?? "") || (this.g.inputs[j]?.length ?? 0) > 0) continue;
      if (parentOf(j) !== parentOf(i)) continue;
      this.inlineInto[j] = i;
      this.inlined[i] = (this.inlined[i] ?? 0) + 1;
    }
  }

  /** The id of the box that shows node i (its consumer's when it is drawn inside one). */
  drawnAs(i: number): string {
    const c = this.inlineInto[i] ?? -1;
    return this.rep(c >= 0 ? c : i);
  }

  /** Ops below every member of a group. */
  groupOpCount(id: string): number {
    let n = 0;
    for (const m of this.groups.get(id)?.members ?? []) n += this.opCount.get(m) ?? 0;
    return n;
  }

  /** Show a group's members one by one (or fold them back into one box). */
  setFolded(id: string, on: boolean): void {
    if (!this.groups.has(id)) return;
    if (on) this.folded.add(id);
    else this.folded.delete(id);
  }

  private foldedGroupOf(scope: string): string | undefined {
    const id = this.memberOf.get(scope);
    return id !== undefined && this.folded.has(id) ? id : undefined;
  }

  /** Hide gradient and optimizer nodes (the "readable" toggle; the server picks them). Returns how many. */
  setReadable(on: boolean): number {
    this.hidden = new Uint8Array(this.g.paths.length);
    this.hiddenBelow.clear();
    if (!on) return 0;
    let n = 0;
    for (const i of this.g.auxiliary ?? []) {
      if (i < 0 || i >= this.hidden.length || this.hidden[i]) continue;
      this.hidden[i] = 1;
      for (const s of this.ancestors[i] ?? []) this.hiddenBelow.set(s, (this.hiddenBelow.get(s) ?? 0) + 1);
      n++;
    }
    return n;
  }

  /** The visible item that stands for node i: its outermost folded group or collapsed scope, or itself. */
  rep(i: number): string {
    for (const scope of this.ancestors[i] ?? []) {
      const g = this.foldedGroupOf(scope);
      if (g !== undefined) return g;
      if (!this.expanded.has(scope)) return `s:${scope}`;
    }
    return `n:${i}`;
  }

  toggle(scope: string): void {
    if (this.expanded.has(scope)) {
      for (const s of [...this.expanded]) if (s === scope || s.startsWith(`${scope}/`)) this.expanded.delete(s);
    } else {
      this.expanded.add(scope);
    }
  }

  /** Unfold the groups and expand every scope above node i so that it is visible. */
  expandTo(i: number): void {
    for (const scope of this.ancestors[i] ?? []) {
      const g = this.memberOf.get(scope);
      if (g !== undefined) this.folded.delete(g);
      this.expanded.add(scope);
    }
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
          const g = this.foldedGroupOf(path);
          if (g !== undefined) {
            const members = this.groups.get(g)?.members ?? [];
            if (members[0] === path && (!anyHidden || members.some((m) => this.scopeVisible(m)))) items.push({ id: g, parent, scope: null, node: null, group: g });
            continue;
          }
          if (anyHidden && !this.scopeVisible(path)) continue;
          if (this.expanded.has(path)) {
            clusters.push({ id: c, path, parent });
            walk(path, c);
          } else {
            items.push({ id: c, parent, scope: path, node: null, group: null });
          }
        } else {
          const i = Number(c.slice(2));
          if (!this.hidden[i] && (this.inlineInto[i] ?? -1) < 0) items.push({ id: c, parent, scope: null, node: i, group: null });
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
      if (this.hidden[i] || (this.inlineInto[i] ?? -1) >= 0) continue;
      const to = reps[i] ?? "";
      for (const j of this.g.inputs[i] ?? []) if (!this.hidden[j] && (this.inlineInto[j] ?? -1) < 0) add(reps[j] ?? "", to, false);
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

/** "layers.0–23" for members layers.0 ... layers.23; "a.1, b.1" when they share no pattern. */
export function groupLabel(members: string[]): string {
  const tails = members.map((m) => m.slice(m.lastIndexOf("/") + 1));
  const first = /^(.*?)(\d+)$/.exec(tails[0] ?? "");
  const last = /^(.*?)(\d+)$/.exec(tails[tails.length - 1] ?? "");
  if (first && last && first[1] === last[1]) return `${first[0]}–${last[2] ?? ""}`;
  return tails.join(", ");
}
