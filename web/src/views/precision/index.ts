// Reduced-precision operators: every op with its computation dtype; filter, export .xlsx.
import "../tensors/tables.css";
import "../graphs/graphs.css";
import { buildUrl, getJson } from "../../api/client";
import type { TagEntry } from "../../api/types";
import { Latest } from "../../core/latest";
import { h, type ViewContext, type ViewInstance } from "../../core/state";

interface Row {
  name: string;
  op: string;
  module_path: string;
  compute_dtype: string;
  reduced: boolean;
  input_dtypes: string[];
  output_dtypes: string[];
}

interface Table {
  total_ops: number;
  reduced_ops: number;
  by_dtype: Record<string, number>;
  matched: number;
  rows: Row[];
}

export function render(el: HTMLElement, ctx: ViewContext): ViewInstance {
  const pick = h("select", { id: "precision-pick" });
  const filter = h("input", { type: "search", id: "precision-filter", placeholder: "filter name / op / dtype (regex)" });
  const reduced = h("input", { type: "checkbox", id: "precision-reduced" });
  const exportLink = h("a", { id: "precision-export", href: "#" }, "export .xlsx");
  const summary = h("div", { class: "precision-summary", id: "precision-summary" });
  const error = h("div", { class: "error-text", id: "precision-error" });
  const body = h("tbody");
  const table = h(
    "table",
    { class: "data-table", id: "precision-table" },
    h("thead", {}, h("tr", {}, ...["op name", "type", "module", "compute dtype", "reduced", "input dtypes", "output dtypes"].map((c) => h("th", {}, c)))),
    body,
  );
  el.append(h("div", { class: "toolbar" }, h("label", {}, "graph ", pick), filter, h("label", {}, reduced, "reduced precision only"), exportLink), summary, error, h("div", { class: "table-wrap" }, table));

  function params(): Record<string, string> {
    const [run, tag] = JSON.parse(pick.value || '["",""]') as [string, string];
    return { run, tag, q: filter.value, reduced: reduced.checked ? "1" : "" };
  }

  const latest = new Latest();

  async function load(): Promise<void> {
    if (!pick.value) return;
    const p = params();
    exportLink.setAttribute("href", buildUrl("/api/views/precision/export.xlsx", p));
    exportLink.setAttribute("download", "");
    error.textContent = "";
    const ticket = latest.next();
    let t: Table;
    try {
      t = await getJson<Table>("/api/views/precision/table", p);
    } catch (err) {
      if (latest.current(ticket)) error.textContent = (err as Error).message;
      return;
    }
    if (!latest.current(ticket)) return; // the filter or a checkbox changed meanwhile
    const dtypes = Object.entries(t.by_dtype).map(([k, v]) => `${k}: ${v}`).join(" · ");
    summary.textContent = `${t.total_ops} ops, ${t.reduced_ops} in reduced precision (${dtypes}) · ${t.matched} match`;
    body.replaceChildren(
      ...t.rows.map((r) =>
        h(
          "tr",
          { class: r.reduced ? "reduced" : "" },
          h("td", {}, r.name),
          h("td", {}, r.op),
          h("td", {}, r.module_path),
          h("td", {}, r.compute_dtype),
          h("td", {}, r.reduced ? "yes" : "no"),
          h("td", {}, r.input_dtypes.join(", ")),
          h("td", {}, r.output_dtypes.join(", ")),
        ),
      ),
    );
    table.dataset.rows = String(t.rows.length);
  }

  let timer = 0;
  filter.addEventListener("input", () => {
    clearTimeout(timer);
    timer = window.setTimeout(() => void load(), 200);
  });
  reduced.addEventListener("change", () => void load());
  pick.addEventListener("change", () => void load());

  async function refresh(): Promise<void> {
    const runs = ctx.state.selectedRuns();
    const tags = runs.length ? (await getJson<{ tags: TagEntry[] }>("/api/views/precision/tags", { run: runs })).tags : [];
    const keep = pick.value;
    pick.replaceChildren();
    for (const t of tags) for (const run of t.runs) pick.append(h("option", { value: JSON.stringify([run, t.tag]) }, `${run} · ${t.tag}`));
    if (!tags.length) {
      summary.textContent = "No graphs in the selected runs.";
      body.replaceChildren();
      return;
    }
    if (keep && [...pick.options].some((o) => o.value === keep)) pick.value = keep;
    await load();
  }
  void refresh();
  return { refresh: () => void refresh(), dispose: () => clearTimeout(timer) };
}
