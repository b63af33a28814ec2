// Loss curves of the selected runs, overlaid next to the comparison table, when the logdir
// also holds training summaries (read through the scalars view's API).
import { getJsonByRuns, mergeSeries, SERIES_RUN_CHUNK, toNumber } from "../../api/client";
import type { ScalarSeriesResponse } from "../../api/types";
import { LineChart } from "../../core/chart";
import { h, type BoardState } from "../../core/state";

/** The loss-like scalar tag most of the selected runs share (`loss` in its name), or null. */
export function pickLossTag(runs: { name: string; tags: Record<string, string[]> }[], selected: Set<string>): string | null {
  const seen = new Map<string, number>();
  for (const r of runs) {
    if (!selected.has(r.name)) continue;
    for (const t of r.tags.scalars ?? []) if (/loss/i.test(t) && !/^hparams?\//i.test(t)) seen.set(t, (seen.get(t) ?? 0) + 1);
  }
  // most runs first, then a training loss, then the shortest name
  const score = (t: string): [number, number, number] => [seen.get(t) ?? 0, /train/i.test(t) ? 1 : 0, -t.length];
  let best: string | null = null;
  for (const t of seen.keys()) {
    if (best === null) { best = t; continue; }
    const [a, b] = [score(t), score(best)];
    if (a[0] > b[0] || (a[0] === b[0] && (a[1] > b[1] || (a[1] === b[1] && (a[2] > b[2] || (a[2] === b[2] && t < best)))))) best = t;
  }
  return best;
}

export class LossCurves {
  private chart: LineChart | null = null;
  private seq = 0;

  constructor(private readonly el: HTMLElement, private readonly state: BoardState) {}

  async refresh(): Promise<void> {
    const seq = ++this.seq;
    const selected = new Set(this.state.selectedRuns());
    const tag = pickLossTag(this.state.runs, selected);
    const runs = this.state.runs.filter((r) => selected.has(r.name) && (r.tags.scalars ?? []).includes(tag ?? "")).map((r) => r.name);
    if (!tag || !runs.length) {
      this.dispose();
      this.el.replaceChildren();
      this.el.hidden = true;
      return;
    }
    this.el.hidden = false;
    if (!this.chart) {
      this.el.replaceChildren(h("div", { class: "cmp-side-head" }, h("b", {}, "loss curves"), h("span", { class: "muted", id: "cmp-loss-tag" })));
      this.chart = new LineChart(this.el, { xKind: "step", yLog: false, xRange: null, yRange: null, axisLabels: ["", ""] }, 150);
      this.chart.canvas.id = "cmp-loss";
      this.el.append(h("div", { class: "cmp-loss-legend", id: "cmp-loss-legend" }));
    }
    const tagLabel = this.el.querySelector("#cmp-loss-tag");
    if (tagLabel) tagLabel.textContent = ` ${tag}`;
    const { series } = await getJsonByRuns<{ series: ScalarSeriesResponse[] }>(
      "/api/views/scalars/multi",
      { tag, x: "step", fields: "step,wall_time,value", width: this.chart.plotWidth() },
      runs,
      mergeSeries,
      SERIES_RUN_CHUNK,
    );
    if (seq !== this.seq || !this.chart) return;
    this.chart.setData(series.map((s) => ({
      label: s.run, color: this.state.color(s.run), x: s.step ?? [], y: s.value.map(toNumber), axis: 0 as const,
      step: s.step, wallTime: s.wall_time, firstWallTime: s.first_wall_time,
    })));
    this.chart.canvas.dataset.series = String(series.length);
    // curves that agree draw on top of each other: name every run and its last value
    const legend = this.el.querySelector("#cmp-loss-legend");
    legend?.replaceChildren(...series.map((s) => {
      const swatch = h("span", { class: "cmp-loss-swatch" });
      swatch.style.background = this.state.color(s.run);
      const last = s.value.length ? toNumber(s.value[s.value.length - 1] ?? null) : Number.NaN;
      return h("div", { title: s.run }, swatch, `${s.run} `, h("span", { class: "muted" }, Number.isFinite(last) ? `last ${last.toPrecision(4)}` : ""));
    }));
  }

  dispose(): void {
    this.chart?.destroy();
    this.chart = null;
  }
}
