// Custom scalars view: the user's add_custom_scalars layout. One fold per category (open
// unless the layout says closed; charts load when their category opens), one chart per
// layout chart: multiline charts plot every scalar tag of the selected runs that matches
// one of the chart's regexes, margin charts a value line inside its lower/upper band.
import { concatLists, getJson, getJsonByRuns, toNumber } from "../../api/client";
import type { JsonNumber, ScalarSeriesResponse } from "../../api/types";
import { LineChart, type ChartSeries } from "../../core/chart";
import { defaultColor } from "../../core/colors";
import { h, type ViewContext, type ViewInstance } from "../../core/state";
import "./custom_scalars.css";

const API = "/api/views/custom_scalars";
const MAX_RUNS = 200;

interface Margin {
  value: string;
  lower: string;
  upper: string;
}

interface LayoutChart {
  title: string;
  kind: "multiline" | "margin";
  tags: string[];
  margins: Margin[];
}

interface LayoutResponse {
  runs: string[];
  categories: { title: string; closed: boolean; charts: LayoutChart[] }[];
  hidden_charts: number;
}

interface MultilineResponse {
  series: ScalarSeriesResponse[];
  matched: number;
  truncated: number;
  invalid: { pattern: string; error: string }[];
}

interface MarginSeries extends ScalarSeriesResponse {
  lower: JsonNumber[];
  upper: JsonNumber[];
}

interface MarginResponse {
  series: MarginSeries[];
  missing: { run: string; tags: string[] }[];
}

class CsCard {
  readonly el: HTMLElement;
  readonly chart: LineChart;
  private readonly info: HTMLElement;
  private seq = 0;
  loaded = false;

  constructor(
    readonly spec: LayoutChart,
    private readonly ctx: ViewContext,
  ) {
    const what =
      spec.kind === "margin"
        ? spec.margins.map((m) => `${m.value} in [${m.lower}, ${m.upper}]`).join("; ")
        : spec.tags.map((t) => `/${t}/`).join(" ");
    this.info = h("div", { class: "chart-info" });
    const body = h("div", { class: "chart-body" });
    this.el = h(
      "section",
      { class: `card cs-card cs-${spec.kind}`, "data-title": spec.title, "data-kind": spec.kind },
      h("div", { class: "card-head" }, h("h3", {}, spec.title), h("span", { class: "cs-kind" }, spec.kind)),
      h("div", { class: "cs-spec muted", title: what }, what),
      body,
      this.info,
    );
    this.chart = new LineChart(body, { xKind: "step", yLog: false, xRange: null, yRange: null, axisLabels: [spec.title, ""], legend: true });
  }

  async load(): Promise<void> {
    this.loaded = true;
    const seq = ++this.seq;
    const runs = this.ctx.state.selectedRuns().slice(0, MAX_RUNS);
    if (!runs.length) {
      this.chart.setData([]);
      this.info.textContent = "No runs selected.";
      return;
    }
    const width = this.chart.plotWidth();
    try {
      const [series, notes] = this.spec.kind === "margin" ? await this.margin(runs, width) : await this.multiline(runs, width);
      if (seq !== this.seq) return;
      this.chart.setData(series);
      this.info.classList.remove("error-text");
      this.info.textContent = notes.join(" · ");
      this.el.dataset.series = series.map((s) => s.label).join("|");
    } catch (err) {
      this.info.textContent = `error: ${String(err)}`;
      this.info.classList.add("error-text");
    }
  }

  private async multiline(runs: string[], width: number): Promise<[ChartSeries[], string[]]> {
    const body = await getJsonByRuns<MultilineResponse>(`${API}/multiline`, { tag_regex: this.spec.tags, width }, runs, (parts) => ({
      ...concatLists<MultilineResponse>("series")(parts),
      matched: parts.reduce((n, p) => n + p.matched, 0),
      truncated: parts.reduce((n, p) => n + p.truncated, 0),
    }));
    const tags = new Set(body.series.map((s) => s.tag));
    const byTag = tags.size > 1;
    const series = body.series.map(
      (s, i): ChartSeries => ({
        label: byTag ? `${s.run}/${s.tag}` : s.run,
        color: byTag ? defaultColor(i) : this.ctx.state.color(s.run),
        x: s.step ?? [],
        y: s.value.map(toNumber),
        step: s.step,
        wallTime: s.wall_time,
        firstWallTime: s.first_wall_time,
        axis: 0,
      }),
    );
    const notes = [`${body.matched} series match`];
    if (body.truncated) notes.push(`${body.truncated} not drawn (limit)`);
    for (const bad of body.invalid) notes.push(`invalid regex /${bad.pattern}/: ${bad.error}`);
    if (!body.matched) notes.push("no scalar tag of the selected runs matches");
    return [series, notes];
  }

  private async margin(runs: string[], width: number): Promise<[ChartSeries[], string[]]> {
    const series: ChartSeries[] = [];
    const notes: string[] = [];
    for (const m of this.spec.margins) {
      const body = await getJsonByRuns<MarginResponse>(`${API}/margin`, { ...m, width }, runs, concatLists("series", "missing"));
      for (const s of body.series) {
        series.push({
          label: this.spec.margins.length > 1 ? `${s.run}/${m.value}` : s.run,
          color: this.ctx.state.color(s.run),
          x: s.step ?? [],
          y: s.value.map(toNumber),
          step: s.step,
          wallTime: s.wall_time,
          firstWallTime: s.first_wall_time,
          axis: 0,
          band: { lower: s.lower.map(toNumber), upper: s.upper.map(toNumber) },
        });
      }
      for (const miss of body.missing) notes.push(`${miss.run} lacks ${miss.tags.join(", ")}`);
    }
    notes.unshift(`${series.length} run${series.length === 1 ? "" : "s"} with a band`);
    return [series, notes];
  }
}

export function render(el: HTMLElement, ctx: ViewContext): ViewInstance {
  const message = h("p", { class: "muted", id: "cs-message" });
  const foldAll = h("button", { type: "button", id: "cs-collapse" }, "collapse all");
  const openAll = h("button", { type: "button", id: "cs-expand" }, "expand all");
  const root = h("div", { id: "cs-categories" });
  el.append(h("div", { class: "toolbar" }, openAll, foldAll, h("span", { class: "muted" }, "the layout of add_custom_scalars; charts follow the run selection")), message, root);
  let cards: CsCard[] = [];
  let key = "";
  const folds = new Map<string, boolean>(); // category -> open, as the user left it

  function build(layout: LayoutResponse): void {
    for (const c of cards) c.chart.destroy();
    cards = [];
    root.replaceChildren();
    for (const cat of layout.categories) {
      const grid = h("div", { class: "cards" });
      const mine = cat.charts.map((spec) => new CsCard(spec, ctx));
      cards.push(...mine);
      for (const c of mine) grid.append(c.el);
      const details = h(
        "details",
        { class: "cs-category", "data-title": cat.title },
        h("summary", {}, h("span", { class: "cs-cat-title" }, cat.title), h("span", { class: "muted" }, ` ${cat.charts.length} chart${cat.charts.length === 1 ? "" : "s"}`)),
        grid,
      );
      details.open = folds.get(cat.title) ?? !cat.closed;
      const loadOpen = (): void => {
        if (details.open) for (const c of mine) if (!c.loaded) void c.load();
      };
      details.addEventListener("toggle", () => {
        folds.set(cat.title, details.open);
        loadOpen();
      });
      root.append(details);
      // after layout, so the charts measure their width
      window.requestAnimationFrame(loadOpen);
    }
    const hidden = layout.hidden_charts ? ` · ${layout.hidden_charts} charts over the limit not shown` : "";
    message.textContent = layout.categories.length
      ? `layout of ${layout.runs.join(", ")}${hidden}`
      : "No custom-scalar layout in the selected runs (write one with add_custom_scalars).";
  }

  async function refresh(): Promise<void> {
    const runs = ctx.state.selectedRuns();
    const layout = runs.length ? await getJson<LayoutResponse>(`${API}/layout`, { run: runs }) : { runs: [], categories: [], hidden_charts: 0 };
    const next = JSON.stringify(layout);
    if (next !== key) {
      key = next;
      build(layout);
      return;
    }
    // same layout: redraw the open charts for the new selection or data
    for (const c of cards) {
      c.loaded = false;
      if (c.el.closest("details")?.open) void c.load();
    }
  }

  const setAll = (open: boolean): void => {
    for (const d of root.querySelectorAll("details")) d.open = open;
  };
  openAll.addEventListener("click", () => setAll(true));
  foldAll.addEventListener("click", () => setAll(false));
  void refresh();
  return {
    refresh: () => void refresh(),
    dispose: () => {
      for (const c of cards) c.chart.destroy();
    },
  };
}
