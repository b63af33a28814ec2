// Data-pipeline graph view: stages laid out with dagre, a parameter panel for the clicked one.
import "../graphs/graphs.css";
import { getJson } from "../../api/client";
import type { TagEntry } from "../../api/types";
import { h, type ViewContext, type ViewInstance } from "../../core/state";
import { type BoxSpec, draw, type EdgeSpec, runLayout, Stage } from "../graphs/stage";

interface Stage_ {
  id: string;
  type: string;
  label: string;
  params: Record<string, unknown>;
}

interface DataGraphResponse {
  records: { step: number; nodes: Stage_[]; edges: [string, string][] }[];
}

export function render(el: HTMLElement, ctx: ViewContext): ViewInstance {
  const pick = h("select", { id: "dg-pick" });
  const stepSel = h("select", { id: "dg-step" });
  const panel = h("aside", { class: "graph-panel", id: "dg-panel" }, h("p", { class: "muted" }, "Click a stage for its parameters."));
  const host = h("div", { class: "graph-host", id: "dg-host" });
  el.append(h("div", { class: "toolbar" }, h("label", {}, "pipeline ", pick), h("label", {}, "step ", stepSel)), h("div", { class: "graph-body" }, host, panel));
  const stage = new Stage(host);
  let data: DataGraphResponse = { records: [] };

  function show(): void {
    const rec = data.records[Number(stepSel.value)];
    if (!rec) return;
    const boxes: BoxSpec[] = rec.nodes.map((n) => ({ id: `d:${n.id}`, label: n.label, sub: n.type === n.label ? "" : n.type, cls: "stage", parent: null }));
    const edges: EdgeSpec[] = rec.edges.map(([a, b]) => ({ from: `d:${a}`, to: `d:${b}`, label: "", cls: "data" }));
    const laid = runLayout(boxes, [], edges);
    const groups = draw(stage.root, laid, boxes, [], edges);
    for (const n of rec.nodes) {
      groups.get(`d:${n.id}`)?.addEventListener("click", () => {
        for (const e of stage.root.querySelectorAll(".box.selected")) e.classList.remove("selected");
        groups.get(`d:${n.id}`)?.classList.add("selected");
        const t = h("table", { class: "kv" }, h("tr", {}, h("th", {}, "type"), h("td", {}, n.type)));
        for (const [k, v] of Object.entries(n.params)) t.append(h("tr", {}, h("th", {}, k), h("td", {}, typeof v === "string" ? v : JSON.stringify(v))));
        panel.replaceChildren(h("h3", {}, n.label), t);
      });
    }
    host.dataset.loaded = String(rec.nodes.length);
    stage.fit(laid.width, laid.height);
  }

  async function load(): Promise<void> {
    const [run, tag] = JSON.parse(pick.value || '["",""]') as [string, string];
    data = await getJson<DataGraphResponse>("/api/views/data_graphs/graph", { run, tag });
    stepSel.replaceChildren(...data.records.map((r, i) => h("option", { value: String(i) }, String(r.step))));
    stepSel.value = String(Math.max(0, data.records.length - 1));
    show();
  }
  stepSel.addEventListener("change", show);
  pick.addEventListener("change", () => void load());

  async function refresh(): Promise<void> {
    const runs = ctx.state.selectedRuns();
    const tags = runs.length ? (await getJson<{ tags: TagEntry[] }>("/api/views/data_graphs/tags", { run: runs })).tags : [];
    const keep = pick.value;
    pick.replaceChildren();
    for (const t of tags) for (const run of t.runs) pick.append(h("option", { value: JSON.stringify([run, t.tag]) }, `${run} · ${t.tag}`));
    if (!tags.length) return;
    if (keep && [...pick.options].some((o) => o.value === keep)) pick.value = keep;
    await load();
  }
  void refresh();
  return { refresh: () => void refresh(), dispose: () => undefined };
}
