// Graphs view: scopes collapsed and identical blocks folded by default, a nested dagre layout
// of the expanded part only (cached per scope), pan/zoom with a minimap, node panel, regex
// search that expands to the hit, readable toggle.
import "./graphs.css";
import { getJson } from "../../api/client";
import type { TagEntry } from "../../api/types";
import { h, type ViewContext, type ViewInstance } from "../../core/state";
import { NestedLayout } from "./layout";
import { type MiniItem, Minimap } from "./minimap";
import { describeOutput, groupLabel, Hierarchy, type GraphJson } from "./model";
import { type BoxSpec, boxHeight, boxWidth, type ClusterSpec, draw, type EdgeSpec, type Placed, Stage } from "./stage";

interface NodeDetail {
  name: string;
  path: string;
  op: string;
  module_path: string;
  shapes: number[][];
  dtypes: string[];
  attrs: Record<string, unknown>;
  inputs: { name: string; op: string; control: boolean; shapes: number[][]; dtypes: string[] }[];
  outputs: { name: string; op: string }[];
  output_count: number;
}

const KIND: Record<string, string> = { Parameter: "param", Buffer: "param", "IO Node": "io", Constant: "param", Const: "param" };

function tail(path: string): string {
  return path.slice(path.lastIndexOf("/") + 1);
}

export function render(el: HTMLElement, ctx: ViewContext): ViewInstance {
  const pick = h("select", { id: "graph-pick" });
  const search = h("input", { type: "search", id: "graph-search", placeholder: "search name or op (regex)" });
  const readable = h("input", { type: "checkbox", id: "graph-readable" });
  const fitBtn = h("button", { id: "graph-fit" }, "fit");
  const info = h("span", { class: "muted", id: "graph-info" });
  const hits = h("div", { class: "graph-hits", id: "graph-hits" });
  const panel = h("aside", { class: "graph-panel", id: "graph-panel" }, h("p", { class: "muted" }, "Click a node for its details; double-click a scope to expand it."));
  const host = h("div", { class: "graph-host", id: "graph-host" });
  const empty = h("div", { class: "graph-empty" });
  el.append(
    h("div", { class: "toolbar" }, h("label", {}, "graph ", pick), search, h("label", {}, readable, "readable (hide gradient/optimizer nodes)"), fitBtn, info),
    hits,
    h("div", { class: "graph-body" }, host, panel),
  );
  const stage = new Stage(host);
  const minimap = new Minimap(host, stage);
  stage.onView = () => minimap.draw();
  let nested = new NestedLayout();
  let hier: Hierarchy | null = null;
  let selected: string | null = null;
  let placed = new Map<string, Placed>();
  let current = "";

  function redraw(fit: boolean): void {
    if (!hier) return;
    const t0 = performance.now();
    const g = hier.g;
    const vis = hier.visible();
    const boxes: BoxSpec[] = vis.items.map((it) => {
      if (it.group !== null) {
        const grp = hier?.groups.get(it.group);
        const n = grp?.members.length ?? 0;
        const each = hier?.opCount.get(grp?.members[0] ?? "") ?? 0;
        return { id: it.id, label: `${groupLabel(grp?.members ?? [])}  ×${n}`, sub: `${n} identical blocks · ${each} nodes each`, cls: "scope group", parent: it.parent };
      }
      if (it.scope !== null) {
        const rep = hier?.repeats.get(it.scope);
        const count = hier?.opCount.get(it.scope) ?? 0;
        return { id: it.id, label: `+ ${tail(it.scope)}`, sub: `${count} node${count === 1 ? "" : "s"}${rep ? ` · 1 of ${rep} identical` : ""}`, cls: `scope${rep ? " repeat" : ""}`, parent: it.parent };
      }
      const i = it.node ?? 0;
      const op = g.ops[i] ?? "";
      const cls = KIND[op] ?? "op";
      const dt = g.dtypes[i] ?? "";
      const reduced = dt === "bfloat16" || dt === "float16" ? " reduced" : "";
      const inner = hier?.inlined[i] ?? 0;
      const sub = describeOutput(dt, g.shapes[i] ?? null) + (inner ? ` · +${inner} param${inner > 1 ? "s" : ""}` : "");
      return { id: it.id, label: cls === "op" ? op.replace(/^aten(::|\.)/, "").replace(/\.default$/, "") : tail(g.paths[i] ?? ""), sub, cls: cls + reduced, parent: it.parent };
    });
    const clusters: ClusterSpec[] = vis.clusters.map((c) => ({ id: c.id, label: tail(c.path), parent: c.parent }));
    const edges: EdgeSpec[] = vis.edges.map((e) => ({ from: e.from, to: e.to, label: `${e.count} tensor${e.count > 1 ? "s" : ""}`, cls: e.control ? "control" : "data" }));
    const tLayout = performance.now();
    const laid = nested.run(
      boxes.map((b) => ({ id: b.id, parent: b.parent, width: boxWidth(b.label, b.sub), height: boxHeight(b.sub) })),
      clusters.map((c) => ({ id: c.id, parent: c.parent, minWidth: 7.6 * c.label.length + 40 })),
      edges,
    );
    const layoutMs = performance.now() - tLayout;
    const groups = draw(stage.root, laid, boxes, clusters, edges);
    const mini: MiniItem[] = clusters.map((c) => ({ id: c.id, kind: "cluster" }));
    for (const b of boxes) mini.push({ id: b.id, kind: b.cls.split(" ").includes("group") ? "group" : (b.cls.split(" ")[0] ?? "op") });
    minimap.setContent(laid, mini);
    placed = new Map();
    for (const [id, grp] of groups) {
      const p = laid.node(id);
      if (p) placed.set(id, p);
      if (id.startsWith("g:")) {
        grp.addEventListener("click", (ev) => {
          ev.stopPropagation();
          void select(id);
        });
        grp.addEventListener("dblclick", (ev) => {
          ev.stopPropagation();
          hier?.setFolded(id, false);
          redraw(false);
        });
      } else if (id.startsWith("s:") && grp.classList.contains("cluster")) {
        grp.querySelector("text")?.addEventListener("click", (ev) => {
          ev.stopPropagation();
          hier?.toggle(id.slice(2));
          redraw(false);
        });
      } else {
        grp.addEventListener("click", (ev) => {
          ev.stopPropagation();
          void select(id);
        });
        if (id.startsWith("s:"))
          grp.addEventListener("dblclick", (ev) => {
            ev.stopPropagation();
            hier?.toggle(id.slice(2));
            redraw(false);
            follow(id);
          });
      }
      if (id === selected) grp.classList.add("selected");
    }
    const ms = performance.now() - t0;
    info.textContent = `${g.node_count} nodes · ${boxes.length} shown · ${edges.length} edges · ${ms.toFixed(0)} ms`;
    host.dataset.visible = String(boxes.length);
    host.dataset.layoutMs = ms.toFixed(1);
    host.dataset.dagreMs = layoutMs.toFixed(1);
    host.dataset.levelsLaidOut = String(nested.laidOut);
    if (fit) stage.fit(laid.width, laid.height);
    else minimap.draw();
    if (selected?.startsWith("s:") || selected?.startsWith("g:")) void select(selected); // expand/collapse label
  }

  /** After expanding a scope, bring its top into view when it is not. */
  function follow(id: string): void {
    const p = placed.get(id);
    if (p) stage.showTop(p.x - p.width / 2, p.y - p.height / 2, p.width);
  }

  function kv(k: string, v: string): HTMLElement {
    return h("tr", {}, h("th", {}, k), h("td", {}, v));
  }

  async function select(id: string): Promise<void> {
    selected = id;
    for (const e of stage.root.querySelectorAll(".box.selected")) e.classList.remove("selected");
    stage.root.querySelector(`[data-id="${CSS.escape(id)}"]`)?.classList.add("selected");
    if (!hier) return;
    if (id.startsWith("g:")) {
      const grp = hier.groups.get(id);
      const btn = h("button", { id: "graph-unfold" }, "unfold");
      btn.addEventListener("click", () => {
        hier?.setFolded(id, false);
        redraw(false);
      });
      const members = grp?.members ?? [];
      panel.replaceChildren(
        h("h3", {}, groupLabel(members)),
        h("table", { class: "kv" }, kv("type", "repeated block"), kv("blocks", String(members.length)), kv("nodes in each", String(hier.opCount.get(members[0] ?? "") ?? 0)), kv("nodes in all", String(hier.groupOpCount(id)))),
        h("p", { class: "muted" }, "Scopes with the same op structure, folded into one box. Double-click it or unfold to see each block."),
        btn,
      );
      return;
    }
    if (id.startsWith("s:")) {
      const path = id.slice(2);
      const btn = h("button", { id: "graph-expand" }, hier.expanded.has(path) ? "collapse" : "expand");
      btn.addEventListener("click", () => {
        hier?.toggle(path);
        redraw(false);
        follow(id);
      });
      const rep = hier.repeats.get(path);
      const gid = hier.memberOf.get(path);
      const extra: HTMLElement[] = [];
      if (gid !== undefined) {
        const fold = h("button", { id: "graph-fold" }, `fold the ${rep ?? 0} identical blocks`);
        fold.addEventListener("click", () => {
          hier?.setFolded(gid, true);
          selected = gid;
          redraw(false);
        });
        extra.push(fold);
      }
      panel.replaceChildren(
        h("h3", {}, path),
        h("table", { class: "kv" }, kv("type", "scope"), kv("nodes below", String(hier.opCount.get(path) ?? 0)), kv("identical siblings", rep ? String(rep) : "none")),
        btn,
        ...extra,
      );
      return;
    }
    const i = Number(id.slice(2));
    const [run, tag] = JSON.parse(current) as [string, string];
    const d = await getJson<NodeDetail>("/api/views/graphs/node", { run, tag, name: hier.g.paths[i] ?? "" });
    const outs = d.shapes.map((s, k) => `${d.dtypes[k] ?? "?"}[${s.join(", ")}]`).join("; ") || d.dtypes.join(", ") || "unknown";
    const ins = h("table", { class: "kv io" });
    for (const x of d.inputs) ins.append(h("tr", {}, h("td", {}, `${x.control ? "^" : ""}${x.name}`), h("td", {}, x.shapes.map((s, k) => `${x.dtypes[k] ?? "?"}[${s.join(", ")}]`).join("; ") || x.dtypes.join(", "))));
    const outsT = h("table", { class: "kv io" });
    for (const x of d.outputs) outsT.append(h("tr", {}, h("td", {}, x.name), h("td", {}, x.op)));
    const attrs = h("table", { class: "kv" });
    for (const [k, v] of Object.entries(d.attrs)) attrs.append(kv(k.replace(/^tensorsight\./, ""), typeof v === "string" ? v : JSON.stringify(v)));
    panel.replaceChildren(
      h("h3", {}, d.name),
      h("table", { class: "kv" }, kv("type", d.op), kv("module path", d.module_path || "(top)"), kv("outputs", outs)),
      h("h4", {}, `inputs (${d.inputs.length})`),
      ins,
      h("h4", {}, `consumers (${d.output_count})`),
      outsT,
      h("h4", {}, "attributes"),
      attrs,
    );
  }

  function reveal(i: number): void {
    if (!hier) return;
    hier.expandTo(i);
    selected = `n:${i}`;
    redraw(false);
    const box = hier.drawnAs(i); // a parameter drawn inside its consumer
    const p = placed.get(box);
    if (p) stage.centerOn(p.x, p.y);
    void select(selected);
    stage.root.querySelector(`[data-id="${CSS.escape(box)}"]`)?.classList.add("selected");
  }

  search.addEventListener("keydown", (ev) => {
    if (ev.key !== "Enter" || !hier) return;
    hits.replaceChildren();
    let found: number[];
    try {
      found = search.value ? hier.search(search.value) : [];
    } catch (err) {
      hits.append(h("span", { class: "error-text" }, `Invalid regex: ${String((err as Error).message)}`));
      return;
    }
    if (!search.value) return;
    hits.append(h("span", { class: "muted" }, `${found.length}${found.length >= 200 ? "+" : ""} hits: `));
    for (const i of found.slice(0, 30)) {
      const a = h("a", { href: "#graphs", class: "hit", "data-node": String(i) }, hier.g.paths[i] ?? "");
      a.addEventListener("click", (e) => {
        e.preventDefault();
        reveal(i);
      });
      hits.append(a);
    }
    if (found.length) reveal(found[0] ?? 0);
  });
  readable.addEventListener("change", () => {
    const n = hier?.setReadable(readable.checked) ?? 0;
    redraw(true);
    info.textContent += ` · ${n} hidden`;
  });
  fitBtn.addEventListener("click", () => {
    const r = stage.root.getBBox();
    stage.fit(r.width + r.x, r.height + r.y);
  });
  pick.addEventListener("change", () => void load());

  async function load(): Promise<void> {
    current = pick.value;
    if (!current) return;
    const [run, tag] = JSON.parse(current) as [string, string];
    const g = await getJson<GraphJson>("/api/views/graphs/graph", { run, tag });
    hits.replaceChildren();
    empty.remove();
    if (g.error) {
      // a model file that could not be read: say why instead of drawing nothing
      hier = null;
      stage.root.replaceChildren();
      minimap.clear();
      minimap.canvas.hidden = true;
      info.textContent = "";
      empty.replaceChildren(h("p", { class: "error-text", id: "graph-error" }, `${tag}: this graph file could not be read: ${g.error}`));
      host.append(empty);
      panel.replaceChildren(h("h3", {}, tag), h("p", { class: "muted" }, `source: ${g.source}`));
      host.dataset.loaded = `${run}/${tag}`;
      host.dataset.error = "1";
      return;
    }
    minimap.canvas.hidden = false;
    delete host.dataset.error;
    hier = new Hierarchy(g);
    nested = new NestedLayout();
    hier.setReadable(readable.checked);
    selected = null;
    redraw(true);
    host.dataset.loaded = `${run}/${tag}`;
  }

  async function refresh(): Promise<void> {
    const runs = ctx.state.selectedRuns();
    const tags = runs.length ? (await getJson<{ tags: TagEntry[] }>("/api/views/graphs/tags", { run: runs })).tags : [];
    const keep = pick.value;
    pick.replaceChildren();
    for (const t of tags) for (const run of t.runs) pick.append(h("option", { value: JSON.stringify([run, t.tag]) }, `${run} · ${t.tag}`));
    if (!tags.length) {
      host.dataset.loaded = "";
      stage.root.replaceChildren();
      info.textContent = "No graphs in the selected runs.";
      return;
    }
    if (keep && [...pick.options].some((o) => o.value === keep)) pick.value = keep;
    else {
      // add_graph's own graph before model files of the same runs
      const main = [...pick.options].find((o) => (JSON.parse(o.value) as [string, string])[1] === "graph");
      if (main) pick.value = main.value;
    }
    if (pick.value !== current) await load();
  }
  void refresh();
  return { refresh: () => void refresh(), dispose: () => undefined };
}
