// One scalars chart: a tag (or two composed tags) with the selected runs overlaid.
import { buildUrl, getJsonByRuns, mergeSeries, SERIES_RUN_CHUNK, toNumber } from "../../api/client";
import type { ScalarSeriesResponse } from "../../api/types";
import { LineChart, type ChartSeries, type XKind, type ZoomBox } from "../../core/chart";
import { smoothEma } from "../../core/smoothing";
import { h } from "../../core/state";
import {
  formatCondition,
  isActive,
  loadThreshold,
  matches,
  parseCondition,
  saveThreshold,
  type Threshold,
} from "../../core/threshold";

export interface ScalarSettings {
  smoothing: number;
  yLog: boolean;
  xKind: XKind;
}

export interface CardSource {
  settings(): ScalarSettings;
  color(run: string): string;
}

const API = "/api/views/scalars";
/** Series whose download links a card lists at once; more go behind a "download" toggle. */
const INLINE_DOWNLOADS = 16;

export function xValues(r: ScalarSeriesResponse, kind: XKind): number[] {
  if (kind === "step") return r.step ?? [];
  if (kind === "relative") return (r.wall_time ?? []).map((w) => w - r.first_wall_time);
  return r.wall_time ?? [];
}

export class ScalarCard {
  readonly el: HTMLElement;
  readonly chart: LineChart;
  private readonly info: HTMLElement;
  private readonly downloads: HTMLElement;
  private readonly back: HTMLButtonElement;
  private readonly reset: HTMLButtonElement;
  private history: ZoomBox[] = [];
  private threshold: Threshold;
  private loaded = false;
  private seq = 0;
  visible = false;

  constructor(
    readonly key: string,
    readonly tags: [string] | [string, string],
    public runs: Map<string, string[]>,
    private readonly source: CardSource,
  ) {
    const composed = tags.length === 2;
    this.threshold = loadThreshold(key);
    const title = composed ? `${tags[0]}  (left) + ${tags[1]}  (right, dashed)` : tags[0];
    const back = (this.back = h("button", { type: "button", class: "zoom-back", title: "step back through the zoom history" }, "◀ zoom back"));
    const reset = (this.reset = h("button", { type: "button", class: "zoom-reset", title: "restore the full range" }, "reset"));
    back.disabled = true;
    reset.disabled = true;
    const t1 = h("input", { class: "thr-1", placeholder: "> 1.5", size: "7", value: formatCondition(this.threshold.first) });
    const join = h("select", { class: "thr-join" }, h("option", { value: "and" }, "AND"), h("option", { value: "or" }, "OR"));
    join.value = this.threshold.join;
    const t2 = h("input", { class: "thr-2", placeholder: "< 0", size: "7", value: formatCondition(this.threshold.second) });
    const onThreshold = (): void => {
      this.threshold = { first: parseCondition(t1.value), second: parseCondition(t2.value), join: join.value === "or" ? "or" : "and" };
      t1.classList.toggle("invalid", t1.value.trim() !== "" && this.threshold.first === null);
      t2.classList.toggle("invalid", t2.value.trim() !== "" && this.threshold.second === null);
      saveThreshold(key, this.threshold);
      void this.load();
    };
    for (const input of [t1, t2]) input.addEventListener("change", onThreshold);
    join.addEventListener("change", onThreshold);
    this.info = h("div", { class: "chart-info" });
    this.downloads = h("div", { class: "downloads" });
    const body = h("div", { class: "chart-body" });
    this.el = h(
      "section",
      { class: composed ? "card scalar-card composed" : "card scalar-card", "data-key": key },
      h("div", { class: "card-head" }, h("h3", {}, title), back, reset),
      body,
      this.info,
      h("div", { class: "card-tools" }, h("span", {}, "highlight"), t1, join, t2),
      this.downloads,
    );
    this.chart = new LineChart(body, {
      xKind: "step",
      yLog: false,
      xRange: null,
      yRange: null,
      axisLabels: [tags[0], tags[1] ?? ""],
      legend: true,
      onZoom: (box) => {
        this.history.push(box);
        void this.load();
      },
    });
    back.addEventListener("click", () => {
      this.history.pop();
      void this.load();
    });
    reset.addEventListener("click", () => {
      this.history = [];
      void this.load();
    });
  }

  zoomDepth(): number {
    return this.history.length;
  }

  resetZoom(): void {
    this.history = [];
  }

  /** Load when first visible; later calls reload (new data, new settings). */
  async load(force = false): Promise<void> {
    if (!this.visible && !force) {
      this.loaded = false;
      return;
    }
    this.loaded = true;
    const seq = ++this.seq;
    const s = this.source.settings();
    const zoom = this.history[this.history.length - 1] ?? null;
    const width = this.chart.plotWidth();
    // one request per tag and chart: every selected run of that tag at once
    const requests: Promise<[string, number, ScalarSeriesResponse][]>[] = [];
    this.tags.forEach((tag, axis) => {
      const runs = this.runs.get(tag) ?? [];
      if (!runs.length) return;
      requests.push(
        getJsonByRuns<{ series: ScalarSeriesResponse[] }>(
          `${API}/multi`,
          {
            tag,
            x: s.xKind,
            fields: "step,wall_time,value", // all three: the hover readout shows them
            xmin: zoom?.x.lo,
            xmax: zoom?.x.hi,
            width,
          },
          runs,
          mergeSeries,
          SERIES_RUN_CHUNK,
        ).then((r) => r.series.map((one): [string, number, ScalarSeriesResponse] => [one.run, axis, one])),
      );
    });
    let results: [string, number, ScalarSeriesResponse][];
    try {
      results = (await Promise.all(requests)).flat();
    } catch (err) {
      this.info.textContent = `error: ${String(err)}`;
      this.info.classList.add("error-text");
      return;
    }
    if (seq !== this.seq) return; // a newer load superseded this one
    this.info.classList.remove("error-text");
    let total = 0;
    let returned = 0;
    let nonfinite = 0;
    let matched = 0;
    const series: ChartSeries[] = results.map(([run, axis, r]) => {
      const raw = r.value.map(toNumber);
      total += r.total_points;
      returned += r.returned_points;
      nonfinite += r.nonfinite_points;
      const highlight = isActive(this.threshold) ? raw.map((v) => matches(this.threshold, v)) : undefined;
      matched += highlight?.filter(Boolean).length ?? 0;
      const smooth = s.smoothing > 0 ? smoothEma(raw, s.smoothing) : raw;
      return {
        label: this.tags.length === 2 ? `${run}/${r.tag}` : run,
        color: this.source.color(run),
        step: r.step,
        wallTime: r.wall_time,
        firstWallTime: r.first_wall_time,
        x: xValues(r, s.xKind),
        y: smooth,
        raw: s.smoothing > 0 ? raw : undefined,
        axis: axis === 0 ? 0 : 1,
        dashed: axis === 1,
        highlight,
      } as ChartSeries;
    });
    this.chart.setData(series, {
      xKind: s.xKind,
      yLog: s.yLog,
      xRange: zoom?.x ?? null,
      yRange: zoom?.y ?? null,
    });
    const parts = [`${returned} of ${total} points drawn`];
    if (nonfinite) parts.push(`${nonfinite} non-finite (NaN/Inf markers on the edges)`);
    if (isActive(this.threshold)) parts.push(`${matched} points match the highlight`);
    if (this.history.length) parts.push(`zoom level ${this.history.length}`);
    const hidden = Number(this.chart.canvas.dataset.hiddenLog ?? "0");
    if (hidden) parts.push(`${hidden} points ≤ 0 hidden on the log scale`);
    this.info.textContent = parts.join(" · ");
    this.el.dataset.zoom = String(this.history.length);
    this.back.disabled = this.history.length === 0;
    this.reset.disabled = this.history.length === 0;
    this.el.dataset.matched = String(matched);
    this.renderDownloads();
  }

  /** Say why the chart is not drawn yet; its first load replaces the text. */
  waiting(text: string): void {
    if (this.chart.canvas.dataset.points === undefined) this.info.textContent = text;
  }

  needsLoad(): boolean {
    return !this.loaded;
  }

  private renderDownloads(): void {
    const count = this.tags.reduce((n, tag) => n + (this.runs.get(tag)?.length ?? 0), 0);
    if (count > INLINE_DOWNLOADS) {
      // a sweep: 2,000 links per chart cost more than the chart; they are made when opened
      // a redraw (new data, the read finishing) keeps the list open if the user opened it
      const was = this.downloads.querySelector<HTMLDetailsElement>("details.dl-more");
      const open = h("details", { class: "dl-more" }, h("summary", {}, `download full resolution (${count} series)`));
      open.addEventListener("toggle", () => {
        if (open.open && open.childElementCount === 1) open.append(this.downloadLinks());
      });
      if (was?.open) {
        open.open = true;
        open.append(this.downloadLinks());
      }
      this.downloads.replaceChildren(open);
      return;
    }
    this.downloads.replaceChildren(h("span", {}, "download full resolution: "), this.downloadLinks());
  }

  private downloadLinks(): DocumentFragment {
    const out = document.createDocumentFragment();
    for (const tag of this.tags) {
      for (const run of this.runs.get(tag) ?? []) {
        const label = this.tags.length === 2 ? `${run}/${tag}` : run;
        const csv = h("a", { href: buildUrl(`${API}/download`, { run, tag, format: "csv" }), download: "", class: "dl-csv" }, "CSV");
        const json = h("a", { href: buildUrl(`${API}/download`, { run, tag, format: "json" }), download: "", class: "dl-json" }, "JSON");
        out.append(h("span", { class: "dl" }, `${label} `, csv, " ", json));
      }
    }
    return out;
  }
}
