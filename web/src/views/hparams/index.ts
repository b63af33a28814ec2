// HParams view: runs x hyperparameters x final metrics. Sort by any column (click its
// header), filter by value ranges (the row under the headers), choose columns, and read the
// shown runs as parallel coordinates. Rows follow the run selection of the sidebar.
import { getJson } from "../../api/client";
import type { HParamsRow, HParamsTable } from "../../api/types";
import { formatNumber, formatWallTime } from "../../core/format";
import { h, type ViewContext, type ViewInstance } from "../../core/state";
import { cell, columns, filterRows, parseBound, sortRows, type Column, type Filter } from "./model";
import { drawParallel } from "./parallel";
import "./hparams.css";

function show(v: unknown): string {
  if (v === null || v === undefined) return "";
  if (typeof v === "number") return formatNumber(v);
  return String(v);
}

export function render(el: HTMLElement, ctx: ViewContext): ViewInstance {
  const status = h("span", { class: "muted", id: "hp-status" });
  const chooser = h("div", { class: "hp-chooser", id: "hp-columns" });
  const details = h("details", { class: "hp-columns" }, h("summary", {}, "columns"), chooser);
  const addTag = h("select", { id: "hp-add-metric" });
  const addButton = h("button", { type: "button", id: "hp-add-metric-go" }, "add metric");
  const clear = h("button", { type: "button", id: "hp-clear-filters" }, "clear filters");
  const table = h("table", { class: "hp-table", id: "hp-table" });
  const wrap = h("div", { class: "hp-table-wrap" }, table);
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("class", "hp-parallel");
  svg.id = "hp-parallel";
  el.append(
    h("div", { class: "toolbar" }, details, h("label", {}, "final value of ", addTag), addButton, clear, status),
    wrap,
    h("h3", { class: "hp-sub" }, "parallel coordinates"),
    svg,
  );

  let data: HParamsTable = { hparams: [], metrics: [], runs: [] };
  const extra: string[] = [];
  const hidden = new Set<string>();
  const filters = new Map<string, Filter>();
  let sortKey = "run";
  let sortDir: 1 | -1 = 1;
  let seq = 0;

  function visibleColumns(): Column[] {
    return columns(data).filter((c) => !hidden.has(c.key));
  }

  function renderChooser(): void {
    chooser.replaceChildren(
      ...columns(data).map((c) => {
        const box = h("input", { type: "checkbox", "data-key": c.key });
        box.checked = !hidden.has(c.key);
        box.addEventListener("change", () => {
          if (box.checked) hidden.delete(c.key);
          else hidden.add(c.key);
          renderTable();
        });
        return h("label", { class: c.group }, box, ` ${c.label}`);
      }),
    );
  }

  function filterCell(c: Column): HTMLElement {
    const f = filters.get(c.key) ?? {};
    const update = (next: Filter): void => {
      if (next.min === undefined && next.max === undefined && !next.text) filters.delete(c.key);
      else filters.set(c.key, next);
      renderBody();
    };
    if (c.type === "number") {
      const lo = h("input", { class: "hp-min", placeholder: "min", size: "5", "data-key": c.key, value: f.min === undefined ? "" : String(f.min) });
      const hi = h("input", { class: "hp-max", placeholder: "max", size: "5", "data-key": c.key, value: f.max === undefined ? "" : String(f.max) });
      const on = (): void => {
        for (const i of [lo, hi]) i.classList.toggle("invalid", i.value.trim() !== "" && parseBound(i.value) === undefined);
        update({ min: parseBound(lo.value), max: parseBound(hi.value) });
      };
      lo.addEventListener("input", on);
      hi.addEventListener("input", on);
      return h("th", { class: "hp-filter" }, lo, hi);
    }
    const text = h("input", { class: "hp-text", placeholder: c.type === "bool" ? "true/false" : "contains", size: "8", "data-key": c.key, value: f.text ?? "" });
    text.addEventListener("input", () => update({ text: text.value }));
    return h("th", { class: "hp-filter" }, text);
  }

  function renderTable(): void {
    const cols = visibleColumns();
    const head = h("tr", { class: "hp-head" });
    const sortButton = (key: string, label: string, group: string): HTMLElement => {
      const arrow = sortKey === key ? (sortDir === 1 ? " ▲" : " ▼") : "";
      const b = h("button", { type: "button", class: "hp-sort", "data-key": key, title: `${label}: click to sort` }, label + arrow);
      b.addEventListener("click", () => {
        if (sortKey === key) sortDir = sortDir === 1 ? -1 : 1;
        else {
          sortKey = key;
          sortDir = 1;
        }
        renderTable();
      });
      return h("th", { class: `hp-col ${group}`, "data-key": key }, b);
    };
    head.append(sortButton("run", "run", "run"));
    for (const c of cols) head.append(sortButton(c.key, c.label, c.group));
    const filterRow = h("tr", { class: "hp-filters" }, h("th", {}, ""), ...cols.map(filterCell));
    table.replaceChildren(h("thead", {}, head, filterRow), h("tbody", {}));
    renderBody();
  }

  function renderBody(): void {
    const cols = visibleColumns();
    const kept = filterRows(data.runs, filters);
    const rows = sortRows(kept, sortKey, sortDir);
    const body = table.tBodies[0] ?? table.appendChild(h("tbody", {}));
    body.replaceChildren(
      ...rows.map((r: HParamsRow) => {
        const swatch = h("span", { class: "hp-swatch" });
        swatch.style.background = ctx.state.color(r.run);
        const tr = h("tr", { class: "hp-row", "data-run": r.run }, h("td", { class: "hp-run", title: `${r.run} · written ${formatWallTime(r.wall_time)}` }, swatch, r.run));
        for (const c of cols) {
          const v = cell(r, c.key);
          const m = c.group === "metric" ? r.metrics[c.key.slice(2)] : null;
          const td = h("td", { class: c.type === "number" ? "num" : "", "data-key": c.key }, show(v));
          if (v !== null) td.dataset.value = String(v);
          if (m) td.title = `step ${m.step}`;
          tr.append(td);
        }
        return tr;
      }),
    );
    table.dataset.rows = String(rows.length);
    status.textContent = data.runs.length
      ? `${rows.length} of ${data.runs.length} runs with hyperparameters${filters.size ? ` · ${filters.size} filter${filters.size > 1 ? "s" : ""}` : ""}`
      : "No hyperparameters in the selected runs (write them with SummaryWriter.add_hparams).";
    drawParallel(svg, cols, data.runs, new Set(rows.map((r) => r.run)), (run) => ctx.state.color(run));
  }

  function renderAddTag(): void {
    const have = new Set(data.metrics.map((m) => m.tag));
    const selected = new Set(ctx.state.selectedRuns());
    const tags = new Set<string>();
    for (const r of ctx.state.runs) if (selected.has(r.name)) for (const t of r.tags.scalars ?? []) if (!have.has(t)) tags.add(t);
    addTag.replaceChildren(...[...tags].sort().map((t) => h("option", { value: t }, t)));
    addButton.disabled = tags.size === 0;
  }

  async function refresh(): Promise<void> {
    const mine = ++seq;
    const runs = ctx.state.selectedRuns();
    const next = runs.length
      ? await getJson<HParamsTable>("/api/views/hparams/table", { run: runs, metric: extra })
      : { hparams: [], metrics: [], runs: [] };
    if (mine !== seq) return;
    data = next;
    renderChooser();
    renderAddTag();
    renderTable();
  }

  addButton.addEventListener("click", () => {
    if (addTag.value && !extra.includes(addTag.value)) extra.push(addTag.value);
    void refresh();
  });
  clear.addEventListener("click", () => {
    filters.clear();
    renderTable();
  });
  const onResize = (): void => renderBody();
  window.addEventListener("resize", onResize);
  void refresh();
  return { refresh: () => void refresh(), dispose: () => window.removeEventListener("resize", onResize) };
}
