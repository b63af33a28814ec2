// Histograms view: one card per run and tag; "front" (overlay) or "top" (offset) mode.
import { getJson } from "../../api/client";
import type { HistogramSeriesResponse, TagEntry } from "../../api/types";
import type { XKind } from "../../core/chart";
import { h, type ViewContext, type ViewInstance } from "../../core/state";
import { decode, drawHistograms, recordsShown, type HistHeight, type HistMode } from "./draw";

export function render(el: HTMLElement, ctx: ViewContext): ViewInstance {
  const mode = h("select", { id: "hist-mode" }, h("option", { value: "front" }, "front (overlay)"), h("option", { value: "top" }, "top (offset)"));
  const yAxis = h(
    "select",
    { id: "hist-y" },
    h("option", { value: "step" }, "step"),
    h("option", { value: "relative" }, "relative time"),
    h("option", { value: "wall_time" }, "wall time"),
  );
  const height = h(
    "select",
    { id: "hist-height" },
    h("option", { value: "density" }, "density (count / bucket width)"),
    h("option", { value: "count" }, "count per bucket"),
  );
  const grid = h("div", { class: "cards", id: "hist-cards" });
  const note = h(
    "p",
    { class: "muted" },
    "Each source bucket is drawn as one flat segment between its edges; buckets are never merged or re-split. Density divides each count by its bucket's width, so uneven buckets (TensorFlow's exponential ones) keep the distribution's shape.",
  );
  el.append(h("div", { class: "toolbar" }, h("label", {}, "mode ", mode), h("label", {}, "y ", yAxis), h("label", {}, "height ", height)), note, grid);
  const loaded: { canvas: HTMLCanvasElement; data: HistogramSeriesResponse; run: string; stats: HTMLElement; text: string }[] = [];

  function redraw(): void {
    for (const item of loaded) {
      drawHistograms(
        item.canvas,
        decode(item.data.records, yAxis.value as XKind),
        mode.value as HistMode,
        yAxis.value as XKind,
        ctx.state.color(item.run),
        height.value as HistHeight,
      );
      const clipped = Number(item.canvas.dataset.clipped ?? "0");
      item.stats.textContent = clipped ? `${item.text} · ${clipped} narrow buckets above the y range, drawn clipped` : item.text;
    }
  }

  async function refresh(): Promise<void> {
    const runs = ctx.state.selectedRuns();
    const tags = runs.length ? (await getJson<{ tags: TagEntry[] }>("/api/views/histograms/tags", { run: runs })).tags : [];
    grid.replaceChildren();
    loaded.length = 0;
    if (!tags.length) grid.append(h("p", { class: "muted" }, "No histogram tags in the selected runs."));
    for (const t of tags) {
      for (const run of t.runs) {
        const data = await getJson<HistogramSeriesResponse>("/api/views/histograms/series", { run, tag: t.tag, limit: String(recordsShown()) });
        const canvas = h("canvas", { class: "chart" });
        canvas.style.height = "260px";
        const last = data.records[data.records.length - 1];
        const stats: string[] = [`${data.records.length} of ${data.total_records} records`];
        if (last && (last.nan_count !== null || last.pos_inf_count !== null || last.neg_inf_count !== null)) {
          stats.push(`last step: NaN ${last.nan_count ?? 0}, +Inf ${last.pos_inf_count ?? 0}, -Inf ${last.neg_inf_count ?? 0}`);
        }
        const statsEl = h("div", { class: "hist-stats" });
        grid.append(
          h("section", { class: "card hist-card", "data-tag": t.tag, "data-run": run }, h("div", { class: "card-head" }, h("h3", {}, `${t.tag} · ${run}`)), canvas, statsEl),
        );
        loaded.push({ canvas, data, run, stats: statsEl, text: stats.join(" · ") });
      }
    }
    redraw();
  }
  mode.addEventListener("change", redraw);
  yAxis.addEventListener("change", redraw);
  height.addEventListener("change", redraw);
  void refresh();
  return { refresh: () => void refresh(), dispose: () => undefined };
}
