// PR curves view: one card per tag; the selected runs' curves overlaid (precision against
// recall), a step slider over the steps of every run, a threshold slider that marks each
// curve's point and lists its counts, and a hover readout (core/hover) with thresholds.
import { concatLists, getJson, getJsonByRuns } from "../../api/client";
import type { TagEntry } from "../../api/types";
import { LineChart, type ChartSeries } from "../../core/chart";
import { formatNumber } from "../../core/format";
import type { HoverRow } from "../../core/hover";
import { compileRegex } from "../../core/runlist";
import { h, type ViewContext, type ViewInstance } from "../../core/state";
import { decodeCurve, thresholdIndex, unionSteps, type Curve, type PrCurvesResponse } from "./model";
import "./pr_curves.css";

const API = "/api/views/pr_curves";
const COLUMNS = ["", "run", "step", "threshold", "precision", "recall", "TP", "FP", "TN", "FN"];

function countText(v: number): string {
  return Number.isFinite(v) ? formatNumber(v) : "–";
}

/** One table row of a curve at point `i`, with data-* attributes for tests. */
function pointRow(c: Curve, i: number, color: string, nearest = false): HTMLTableRowElement {
  const tr = h("tr", { class: nearest ? "pr-row nearest" : "pr-row" });
  tr.dataset.run = c.run;
  tr.dataset.step = String(c.step);
  tr.dataset.threshold = String(c.thresholds[i]);
  tr.dataset.precision = String(c.precision[i]);
  tr.dataset.recall = String(c.recall[i]);
  const sw = h("span", { class: "tt-swatch" });
  sw.style.background = color;
  const cells = [
    c.run,
    String(c.step),
    formatNumber(c.thresholds[i] as number),
    formatNumber(c.precision[i] as number),
    formatNumber(c.recall[i] as number),
    countText(c.tp[i] as number),
    countText(c.fp[i] as number),
    countText(c.tn[i] as number),
    countText(c.fn[i] as number),
  ];
  tr.append(h("td", {}, sw), ...cells.map((t, k) => h("td", { class: k === 0 ? "pr-run" : "num" }, t)));
  return tr;
}

function table(rows: HTMLTableRowElement[]): HTMLTableElement {
  return h("table", { class: "pr-table" }, h("tr", {}, ...COLUMNS.map((c) => h("th", {}, c))), ...rows);
}

class PrCard {
  readonly el: HTMLElement;
  readonly chart: LineChart;
  private readonly stepSlider: HTMLInputElement;
  private readonly stepLabel: HTMLElement;
  private readonly thrSlider: HTMLInputElement;
  private readonly thrLabel: HTMLElement;
  private readonly at: HTMLElement;
  private readonly info: HTMLElement;
  private curves: Curve[] = [];
  private steps: number[] = [];
  /** The step asked for; null: each run's last curve. */
  private step: number | null = null;
  private seq = 0;
  private timer = 0;

  constructor(
    readonly tag: string,
    public runs: string[],
    private readonly color: (run: string) => string,
  ) {
    this.stepSlider = h("input", { type: "range", class: "pr-step", min: "0", max: "0", step: "1", value: "0" });
    this.stepLabel = h("span", { class: "pr-step-label" });
    this.thrSlider = h("input", { type: "range", class: "pr-threshold", min: "0", max: "1", step: "0.01", value: "0.5" });
    this.thrLabel = h("span", { class: "pr-threshold-label" }, "0.50");
    this.at = h("div", { class: "pr-at" });
    this.info = h("div", { class: "chart-info" });
    const body = h("div", { class: "chart-body" });
    this.el = h(
      "section",
      { class: "card pr-card", "data-tag": tag },
      h("div", { class: "card-head" }, h("h3", {}, tag)),
      h(
        "div",
        { class: "card-tools pr-controls" },
        h("label", {}, "step ", this.stepSlider, this.stepLabel),
        h("label", {}, "threshold ", this.thrSlider, this.thrLabel),
      ),
      body,
      h("div", { class: "pr-axes muted" }, "y: precision · x: recall · ring: the threshold's point"),
      this.info,
      this.at,
    );
    this.chart = new LineChart(body, {
      xKind: "step",
      yLog: false,
      xRange: { lo: 0, hi: 1 },
      yRange: { lo: 0, hi: 1.02 },
      axisLabels: ["precision", "recall"],
      legend: true,
      tooltip: (rows) => this.tooltip(rows),
    });
    this.stepSlider.addEventListener("input", () => {
      this.step = this.steps[Number(this.stepSlider.value)] ?? null;
      this.stepLabel.textContent = this.stepText();
      window.clearTimeout(this.timer);
      this.timer = window.setTimeout(() => void this.load(), 80);
    });
    this.thrSlider.addEventListener("input", () => this.draw());
  }

  private stepText(): string {
    if (!this.steps.length) return "";
    const shown = this.step ?? this.steps[this.steps.length - 1];
    return `${shown} (${this.steps.length} steps)`;
  }

  private tooltip(rows: HoverRow[]): HTMLElement {
    const out = rows
      .map((r) => {
        const c = this.curves[r.series];
        return c ? pointRow(c, r.index, r.color, r.nearest) : null;
      })
      .filter((r): r is HTMLTableRowElement => r !== null);
    return table(out);
  }

  async load(): Promise<void> {
    const seq = ++this.seq;
    if (!this.runs.length) return;
    let body: PrCurvesResponse;
    try {
      body = await getJsonByRuns<PrCurvesResponse>(
        `${API}/curves`,
        { tag: this.tag, step: this.step ?? undefined },
        this.runs,
        concatLists("curves", "missing"),
      );
    } catch (err) {
      this.info.textContent = `error: ${String(err)}`;
      this.info.classList.add("error-text");
      return;
    }
    if (seq !== this.seq) return;
    this.info.classList.remove("error-text");
    this.curves = body.curves.map(decodeCurve);
    this.steps = unionSteps(this.curves);
    this.stepSlider.max = String(Math.max(0, this.steps.length - 1));
    const pos = this.step === null ? this.steps.length - 1 : this.steps.indexOf(this.step);
    this.stepSlider.value = String(Math.max(0, pos));
    this.stepSlider.disabled = this.steps.length < 2;
    this.stepLabel.textContent = this.stepText();
    const parts = this.curves.map((c) => `${c.run}: step ${c.step}, ${c.thresholds.length} thresholds`);
    if (body.curves.some((c) => c.downsampled)) parts.push("long curves thinned");
    this.info.textContent = parts.join(" · ");
    this.el.dataset.step = String(this.step ?? "last");
    this.el.dataset.runs = this.curves.map((c) => c.run).join("|");
    this.el.dataset.steps = this.curves.map((c) => String(c.step)).join("|");
    this.draw();
  }

  private draw(): void {
    const t = Number(this.thrSlider.value);
    this.thrLabel.textContent = t.toFixed(2);
    const at = this.curves.map((c) => thresholdIndex(c.thresholds, t));
    const series: ChartSeries[] = this.curves.map((c, k) => ({
      label: c.run,
      color: this.color(c.run),
      x: c.recall,
      y: c.precision,
      axis: 0,
      highlight: c.recall.map((_, i) => i === at[k]),
    }));
    this.chart.setData(series);
    this.at.replaceChildren(table(this.curves.map((c, k) => pointRow(c, Math.max(0, at[k] as number), this.color(c.run)))));
    this.el.dataset.threshold = t.toFixed(2);
  }
}

export function render(el: HTMLElement, ctx: ViewContext): ViewInstance {
  const tagFilter = h("input", { type: "search", id: "pr-tag-filter", placeholder: "filter tags (regex)" });
  const message = h("p", { class: "muted", id: "pr-message" });
  const grid = h("div", { class: "cards pr-cards", id: "pr-cards" });
  el.append(h("div", { class: "toolbar" }, tagFilter, h("span", { class: "muted" }, "hover a chart for each run's point; drag the sliders to change step and threshold")), message, grid);
  const cards = new Map<string, PrCard>();
  let tags: TagEntry[] = [];

  function layout(): void {
    const re = compileRegex(tagFilter.value);
    tagFilter.classList.toggle("invalid", re === null);
    const shown = tags.filter((t) => re === null || re.test(t.tag));
    for (const [tag, card] of cards) {
      if (!shown.some((t) => t.tag === tag)) {
        card.chart.destroy();
        cards.delete(tag);
      }
    }
    grid.replaceChildren();
    for (const t of shown) {
      let card = cards.get(t.tag);
      if (!card) {
        card = new PrCard(t.tag, t.runs, (run) => ctx.state.color(run));
        cards.set(t.tag, card);
      } else {
        card.runs = t.runs;
      }
      grid.append(card.el);
      void card.load();
    }
    message.textContent = tags.length ? `${shown.length} of ${tags.length} PR-curve tags` : "No PR-curve tags in the selected runs.";
  }

  async function fetchTags(): Promise<void> {
    const runs = ctx.state.selectedRuns();
    tags = runs.length ? (await getJson<{ tags: TagEntry[] }>(`${API}/tags`, { run: runs })).tags : [];
    layout();
  }

  tagFilter.addEventListener("input", () => layout());
  void fetchTags();
  return {
    refresh: () => void fetchTags(),
    dispose: () => {
      for (const card of cards.values()) card.chart.destroy();
    },
  };
}
