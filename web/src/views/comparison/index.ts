// Comparison view: results of `tensorsight compare` found under the logdir. The first
// divergence is pinned on top with the advisor's sentence; below, the module overlay and
// either the table of every row (server-side filter, sort and paging keep 10,000+ rows fast)
// or the bench and target op traces side by side; a row or an op line opens its drill-down.
import { getJson, type Params } from "../../api/client";
import { Latest } from "../../core/latest";
import { h, type ViewContext, type ViewInstance } from "../../core/state";
import "./comparison.css";
import { renderDetail } from "./detail";
import { renderFirstDivergence } from "./first";
import { LossCurves } from "./losses";
import { fmtMetric, VERDICT_COLORS } from "./scale";
import { SideBySide } from "./sides";
import { renderTable } from "./table";
import { renderTree, visibleTree } from "./tree";
import type { ComparisonInfo, ModuleNode, Row, RowPage, SummaryResponse } from "./types";

const API = "/api/views/comparison";
const PAGE = 100;
const DEFAULT_METRICS = ["cosine", "max_abs_err", "rel_euclidean", "max_rel_err", "max_ulp"];
const STORE_KEY = "tensorsight.comparison.metrics";

interface Query {
  verdicts: Set<string>;
  direction: string;
  op: string;
  module: string;
  modulePrefix: string | null;
  match: string;
  rangeMetric: string;
  min: string;
  max: string;
  sort: string | null;
  desc: boolean;
  offset: number;
}

export function render(el: HTMLElement, ctx: ViewContext): ViewInstance {
  let infos: ComparisonInfo[] = [];
  let name = "";
  let summary: SummaryResponse | null = null;
  let selected: number | null = null;
  let colorBy = "verdict";
  let mode: "table" | "sides" = "table";
  let sidesFor = "";
  const rowsLatest = new Latest(); // a slower, older answer must not replace a newer one
  const treeLatest = new Latest(); // the module tree, likewise (another comparison's, say)
  const unmatchedLatest = new Latest();
  let openScopes: Set<string> | null = null;
  let disposed = false;
  const q: Query = {
    verdicts: new Set(), direction: "", op: "", module: "", modulePrefix: null, match: "all",
    rangeMetric: "", min: "", max: "", sort: null, desc: false, offset: 0,
  };

  const picker = h("select", { id: "cmp-select", title: "comparison" });
  const runs = h("span", { class: "muted cmp-runs" });
  const counts = h("span", { class: "cmp-counts", id: "cmp-counts" });
  const dirToggle = h("span", { class: "cmp-toggle", id: "cmp-direction" });
  const columns = h("details", { class: "cmp-columns", id: "cmp-columns" }, h("summary", {}, "metric columns"));
  const first = h("section", { class: "cmp-first", id: "cmp-first" });
  const treeBox = h("div", { class: "cmp-tree-box" });
  const colorSel = h("select", { id: "cmp-color-by", title: "colour scopes by" });
  const filters = h("div", { class: "cmp-filters", id: "cmp-filters" });
  const status = h("div", { class: "muted cmp-status", id: "cmp-status" });
  const tableBox = h("div", { class: "cmp-table-box" });
  const pager = h("div", { class: "cmp-pager", id: "cmp-pager" });
  const unmatched = h("section", { class: "cmp-unmatched", id: "cmp-unmatched" });
  const modes = h("span", { class: "cmp-toggle cmp-modes", id: "cmp-mode" });
  const tablePart = h("div", { class: "cmp-table-part" }, filters, status, tableBox, pager, unmatched);
  const sides = new SideBySide((position) => void selectPosition(position));
  sides.el.hidden = true;
  const detail = h("aside", { class: "cmp-detail", id: "cmp-detail", hidden: "" });
  // the drawer takes its width from the view instead of covering the banner, filters and table
  const showDetail = (on: boolean): void => {
    detail.hidden = !on;
    el.classList.toggle("detail-open", on);
  };
  const lossBox = h("div", { class: "cmp-losses", id: "cmp-losses", hidden: "" });
  const losses = new LossCurves(lossBox, ctx.state);
  el.append(
    h("div", { class: "cmp-bar toolbar" }, picker, runs, counts, h("span", { class: "cmp-spacer" }), dirToggle, columns),
    first,
    h("div", { class: "cmp-main" },
      h("aside", { class: "cmp-side" }, h("div", { class: "cmp-side-head" }, h("b", {}, "modules"), " colour by ", colorSel), treeBox, lossBox),
      h("section", { class: "cmp-body" }, h("div", { class: "cmp-body-head" }, modes), tablePart, sides.el)),
    detail,
  );

  const info = (): ComparisonInfo | undefined => summary?.comparison;
  const higher = (): Set<string> => new Set(info()?.higher_is_better ?? []);

  function shownMetrics(): string[] {
    const all = info()?.metrics ?? [];
    let want: string[] = DEFAULT_METRICS;
    try {
      const saved = JSON.parse(localStorage.getItem(STORE_KEY) ?? "null") as unknown;
      if (Array.isArray(saved)) want = saved.filter((s): s is string => typeof s === "string");
    } catch {
      // keep the default
    }
    return all.filter((m) => want.includes(m));
  }

  function params(): Params {
    const p: Params = { name, offset: q.offset, limit: PAGE, match: q.match };
    if (q.verdicts.size) p.verdict = [...q.verdicts];
    if (q.direction) p.direction = q.direction;
    if (q.op) p.op = q.op;
    if (q.module) p.module = q.module;
    if (q.modulePrefix !== null) p.module_prefix = q.modulePrefix;
    if (q.sort) p.sort = q.sort;
    if (q.desc) p.desc = "1";
    if (q.rangeMetric && q.min.trim() !== "" && Number.isFinite(Number(q.min))) p[`min.${q.rangeMetric}`] = q.min.trim();
    if (q.rangeMetric && q.max.trim() !== "" && Number.isFinite(Number(q.max))) p[`max.${q.rangeMetric}`] = q.max.trim();
    return p;
  }

  function renderBar(): void {
    picker.replaceChildren(...infos.map((c) => {
      const o = h("option", { value: c.name }, c.error ? `${c.name} (unreadable)` : c.name);
      o.disabled = c.error !== null;
      return o;
    }));
    picker.value = name;
    const c = info();
    if (!c) return;
    runs.textContent = `${c.bench} → ${c.target} · ${c.profile} profile · ${c.row_count} rows`;
    runs.title = runs.textContent;
    counts.replaceChildren(...["error", "warning", "pass", "one_sided", "unmatched"].map((k) => {
      const label = k === "one_sided" ? "one-sided" : k;
      const b = h("span", { class: `cmp-count ${k}`, "data-kind": k }, `${c.counts[k] ?? 0} ${label}`);
      if (k === "one_sided") b.title = "present on one side only by design (casts, detach, allocations): neutral";
      const col = VERDICT_COLORS[k];
      if (col) b.style.borderColor = col;
      return b;
    }));
    dirToggle.replaceChildren(...[["", "both"], ["forward", "forward"], ["backward", "backward"]].map(([v, label]) => {
      const b = h("button", { type: "button", "data-direction": v ?? "" }, label ?? "");
      b.classList.toggle("selected", q.direction === v);
      b.addEventListener("click", () => { q.direction = v ?? ""; q.offset = 0; renderBar(); void loadTree(); void loadRows(); sides.setDirection(q.direction); });
      return b;
    }));
    const shown = new Set(shownMetrics());
    const menu = h("div", { class: "cmp-columns-menu" });
    columns.replaceChildren(h("summary", {}, "metric columns"), menu);
    menu.append(...c.metrics.map((m) => {
      const box = h("input", { type: "checkbox", "data-metric": m });
      box.checked = shown.has(m);
      box.addEventListener("change", () => {
        const next = c.metrics.filter((k) => (k === m ? box.checked : shown.has(k)));
        localStorage.setItem(STORE_KEY, JSON.stringify(next));
        renderBar();
        void loadRows();
      });
      return h("label", {}, box, m);
    }));
    renderModes();
    colorSel.replaceChildren(h("option", { value: "verdict" }, "verdict"), ...c.metrics.map((m) => h("option", { value: m }, m)));
    colorSel.value = colorBy;
  }

  function renderModes(): void {
    const c = info();
    const differ = (c?.counts.unmatched ?? 0) > 0;
    modes.replaceChildren(...([["table", "table"], ["sides", differ ? "side by side ⚠" : "side by side"]] as const).map(([m, label]) => {
      const b = h("button", { type: "button", "data-mode": m }, label);
      if (m === "sides") b.title = differ ? "the two runs' structures differ: see both op traces side by side" : "both op traces side by side, grouped by module";
      b.classList.toggle("selected", mode === m);
      b.addEventListener("click", () => setMode(m));
      return b;
    }));
  }

  function setMode(m: "table" | "sides"): void {
    mode = m;
    tablePart.hidden = m !== "table";
    sides.el.hidden = m !== "sides";
    if (m === "sides" && sidesFor !== name && summary) {
      sidesFor = name;
      sides.open(name, summary.comparison.bench, summary.comparison.target, q.direction);
    }
    renderModes();
  }

  /** Show row `position` in the side-by-side trace (both directions if it may be hidden). */
  async function locate(row: { position: number; direction?: string }): Promise<void> {
    if (q.direction && q.direction !== row.direction) {
      q.direction = "";
      q.offset = 0;
      renderBar();
      void loadTree();
      void loadRows();
      sides.setDirection("");
    }
    setMode("sides");
    await sides.jump(row.position);
  }

  /** Show row `position` in the table: filters cleared, execution order, its page. */
  async function showInTable(row: Row): Promise<void> {
    Object.assign(q, { verdicts: new Set(), direction: "", op: "", module: "", modulePrefix: null, match: "all", rangeMetric: "", min: "", max: "", sort: null, desc: false });
    q.offset = Math.floor(row.position / PAGE) * PAGE;
    setMode("table");
    renderBar();
    renderFilters();
    sides.setDirection("");
    await Promise.all([loadRows(), loadTree()]);
    tableBox.querySelector(`tr[data-position="${row.position}"]`)?.scrollIntoView({ block: "center" });
  }

  async function selectPosition(position: number): Promise<void> {
    // no filters, execution order: the row at offset `position` is row `position`
    const page = await getJson<RowPage>(`${API}/rows`, { name, offset: position, limit: 1 });
    const row = page.rows[0];
    if (row && row.position === position && !disposed) await select(row);
  }

  function renderFirst(): void {
    renderFirstDivergence(first, summary, {
      inspect: (row) => void select(row),
      locate: (row) => void locate(row),
      sides: () => setMode("sides"),
    });
  }

  function renderFilters(): void {
    const c = info();
    if (!c) return;
    const verdicts = ["error", "warning", "pass"].map((v) => {
      const box = h("input", { type: "checkbox", "data-verdict": v });
      box.checked = q.verdicts.has(v);
      box.addEventListener("change", () => { if (box.checked) q.verdicts.add(v); else q.verdicts.delete(v); q.offset = 0; void loadRows(); });
      return h("label", {}, box, v);
    });
    const text = (id: string, placeholder: string, get: () => string, set: (s: string) => void): HTMLInputElement => {
      const input = h("input", { type: "search", id, placeholder });
      input.value = get();
      let timer = 0;
      input.addEventListener("input", () => { window.clearTimeout(timer); timer = window.setTimeout(() => { set(input.value); q.offset = 0; void loadRows(); }, 200); });
      return input;
    };
    const match = h("select", { id: "cmp-match" }, ...["all", "matched", "unmatched"].map((m) => h("option", { value: m }, m)));
    match.value = q.match;
    match.addEventListener("change", () => { q.match = match.value; q.offset = 0; void loadRows(); });
    const rangeSel = h("select", { id: "cmp-range-metric" }, h("option", { value: "" }, "range of…"), ...c.metrics.map((m) => h("option", { value: m }, m)));
    rangeSel.value = q.rangeMetric;
    const lo = text("cmp-min", "min", () => q.min, (s) => { q.min = s; });
    const hi = text("cmp-max", "max", () => q.max, (s) => { q.max = s; });
    lo.classList.add("cmp-num");
    hi.classList.add("cmp-num");
    rangeSel.addEventListener("change", () => {
      q.rangeMetric = rangeSel.value;
      const r = summary?.metric_ranges[q.rangeMetric];
      lo.placeholder = r ? fmtMetric(q.rangeMetric, r[0]) : "min";
      hi.placeholder = r ? fmtMetric(q.rangeMetric, r[1]) : "max";
      q.offset = 0;
      void loadRows();
    });
    const scope = h("span", { class: "cmp-scope" });
    if (q.modulePrefix !== null) {
      const clear = h("button", { type: "button", id: "cmp-scope-clear", title: "show every module" }, "✕");
      clear.addEventListener("click", () => void selectScope(null));
      scope.append(`module ${q.modulePrefix || "<root>"} `, clear);
    }
    filters.replaceChildren(
      ...verdicts,
      text("cmp-op", "op contains", () => q.op, (s) => { q.op = s; }),
      text("cmp-module", "module contains", () => q.module, (s) => { q.module = s; }),
      match, rangeSel, lo, h("span", {}, "–"), hi, scope,
    );
  }

  async function loadRows(): Promise<void> {
    if (!summary) return;
    const ticket = rowsLatest.next();
    let page: RowPage;
    try {
      page = await getJson<RowPage>(`${API}/rows`, params());
    } catch (err) {
      if (!rowsLatest.current(ticket)) return;
      status.textContent = String(err instanceof Error ? err.message : err);
      status.classList.add("error-text");
      return;
    }
    if (!rowsLatest.current(ticket) || disposed) return;
    status.classList.remove("error-text");
    const from = page.matched ? page.offset + 1 : 0;
    const to = page.offset + page.rows.length;
    status.textContent = `rows ${from}–${to} of ${page.matched} shown (${page.total} in the comparison)`;
    renderTable(tableBox, page.rows, {
      metrics: shownMetrics(), budget: summary.comparison.profile === "budget", higher: higher(), ranges: summary.metric_ranges, sort: q.sort, desc: q.desc,
      firstDivergence: summary.comparison.first_divergence, selected,
      onSort: (col) => {
        if ((q.sort ?? "position") === col) q.desc = !q.desc;
        else { q.sort = col === "position" ? null : col; q.desc = col !== "position" && !higher().has(col) && col !== "verdict" ? true : col === "verdict"; }
        q.offset = 0;
        void loadRows();
      },
      onSelect: (r) => void select(r),
    });
    const prev = h("button", { type: "button", id: "cmp-prev" }, "◀ prev");
    const next = h("button", { type: "button", id: "cmp-next" }, "next ▶");
    prev.disabled = q.offset === 0;
    next.disabled = to >= page.matched;
    prev.addEventListener("click", () => { q.offset = Math.max(0, q.offset - PAGE); void loadRows(); });
    next.addEventListener("click", () => { q.offset += PAGE; void loadRows(); });
    pager.replaceChildren(prev, ` page ${Math.floor(q.offset / PAGE) + 1} of ${Math.max(1, Math.ceil(page.matched / PAGE))} `, next);
  }

  async function loadUnmatched(): Promise<void> {
    const ticket = unmatchedLatest.next(); // first: an older comparison's answer is stale too
    const c = info();
    if (!c || !(c.counts.unmatched ?? 0)) return void unmatched.replaceChildren();
    const page = await getJson<RowPage>(`${API}/rows`, { name, match: "unmatched", limit: 1000 });
    if (disposed || !unmatchedLatest.current(ticket)) return;
    // one line per op: its tensors share the reason
    const groups = new Map<string, Row[]>();
    for (const r of page.rows) {
      const key = `${r.rank ?? 0}|${r.index ?? ""}|${r.direction}|${r.op}|${r.module_path}`;
      groups.set(key, [...(groups.get(key) ?? []), r]);
    }
    const items = [...groups.values()].map((rs) => {
      const r = rs[0] as Row;
      const go = h("button", { type: "button", class: "cmp-locate", title: "show it in the side-by-side op traces" }, "↔");
      go.addEventListener("click", (ev) => { ev.stopPropagation(); void locate(r); });
      const li = h("li", { "data-position": String(r.position) }, go, " ",
        h("span", { class: "mono" }, `${r.op} [${r.direction}]`),
        h("span", { class: "muted" }, ` ${rs.map((x) => x.tensor).join(", ")} in ${r.module_path || "<root>"} — `),
        r.reason);
      li.addEventListener("click", () => void select(r));
      return li;
    });
    const more = page.matched > page.rows.length ? ` (first ${page.rows.length} tensors listed; filter the table by "unmatched" for all)` : "";
    const sbs = h("button", { type: "button", id: "cmp-unmatched-sides" }, "see both traces side by side");
    sbs.addEventListener("click", () => setMode("sides"));
    const box = h("details", {}, h("summary", {}, h("b", {}, `Unmatched: ${page.matched} tensors of ${groups.size}${more ? "+" : ""} ops`), more), h("ul", {}, ...items));
    box.open = groups.size <= 10;
    unmatched.replaceChildren(box, h("div", { class: "cmp-unmatched-sides" }, "The two runs' structures differ: ", sbs));
  }

  async function loadTree(): Promise<void> {
    if (!summary) return;
    const p: Params = { name };
    if (q.direction) p.direction = q.direction;
    if (colorBy !== "verdict") p.metric = colorBy;
    const ticket = treeLatest.next();
    const { tree } = await getJson<{ tree: ModuleNode }>(`${API}/tree`, p);
    if (disposed || !treeLatest.current(ticket)) return;
    openScopes ??= visibleTree(tree);
    renderTree(treeBox, tree, {
      colorBy, range: summary.metric_ranges[colorBy] ?? null, higherIsBetter: higher().has(colorBy),
      selected: q.modulePrefix,
      onSelect: (path, node) => {
        void selectScope(path);
        if (mode === "sides" && path !== null && node.first_position >= 0) void sides.jump(node.first_position);
      },
    }, openScopes);
  }

  async function selectScope(path: string | null): Promise<void> {
    q.modulePrefix = path;
    q.offset = 0;
    renderFilters();
    await Promise.all([loadRows(), loadTree()]);
  }

  async function select(row: Row): Promise<void> {
    selected = row.position;
    for (const tr of tableBox.querySelectorAll("tr.selected")) tr.classList.remove("selected");
    tableBox.querySelector(`tr[data-position="${row.position}"]`)?.classList.add("selected");
    showDetail(true);
    try {
      await renderDetail(detail, name, row, {
        close: () => { showDetail(false); selected = null; tableBox.querySelector("tr.selected")?.classList.remove("selected"); },
        locate: () => void locate(row),
        table: () => void showInTable(row),
      });
    } catch (err) {
      detail.append(h("p", { class: "error-text" }, String(err instanceof Error ? err.message : err)));
    }
  }

  async function open(next: string): Promise<void> {
    name = next;
    selected = null;
    sidesFor = "";
    openScopes = null;
    showDetail(false);
    treeBox.replaceChildren(); // never the previous comparison's tree while this one loads
    unmatched.replaceChildren();
    Object.assign(q, { verdicts: new Set(), op: "", module: "", modulePrefix: null, match: "all", rangeMetric: "", min: "", max: "", sort: null, desc: false, offset: 0 });
    summary = await getJson<SummaryResponse>(`${API}/summary`, { name });
    if (disposed || name !== next) return;
    renderBar();
    renderFirst();
    renderFilters();
    setMode(mode);
    await Promise.all([loadRows(), loadTree(), loadUnmatched()]);
  }

  async function refresh(): Promise<void> {
    infos = (await getJson<{ comparisons: ComparisonInfo[] }>(`${API}/list`)).comparisons;
    if (disposed) return;
    const readable = infos.filter((c) => c.error === null);
    if (!readable.length) {
      first.replaceChildren(h("p", { class: "muted" }, "No comparison results under the logdir. Write one with Comparison.to_json(\"<logdir>/compare/<name>/comparison.json\")."));
      picker.replaceChildren();
      return;
    }
    const keep = readable.find((c) => c.name === name);
    if (keep && summary && keep.mtime === summary.comparison.mtime) {
      renderBar(); // new training data elsewhere in the logdir: keep the filters and the page
      return;
    }
    const pick = keep ?? readable.find((c) => c.first_divergence !== null) ?? readable[0];
    if (pick) await open(pick.name);
  }

  picker.addEventListener("change", () => void open(picker.value));
  colorSel.addEventListener("change", () => { colorBy = colorSel.value; void loadTree(); });
  void refresh();
  void losses.refresh();
  return {
    refresh: (reason) => {
      if (reason === "data") void refresh();
      void losses.refresh();
    },
    dispose: () => {
      disposed = true;
      losses.dispose();
      sides.dispose();
    },
  };
}
