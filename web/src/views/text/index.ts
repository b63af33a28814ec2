// Text view: each record's Markdown rendered safely (escaped first; see core/markdown.ts).
import { getJson } from "../../api/client";
import type { TagEntry, TextSeriesResponse } from "../../api/types";
import { renderMarkdown } from "../../core/markdown";
import { h, type ViewContext, type ViewInstance } from "../../core/state";

export function render(el: HTMLElement, ctx: ViewContext): ViewInstance {
  const grid = h("div", { class: "cards", id: "text-cards" });
  el.append(grid);

  async function refresh(): Promise<void> {
    const runs = ctx.state.selectedRuns();
    const tags = runs.length ? (await getJson<{ tags: TagEntry[] }>("/api/views/text/tags", { run: runs })).tags : [];
    grid.replaceChildren();
    if (!tags.length) grid.append(h("p", { class: "muted" }, "No text tags in the selected runs."));
    for (const t of tags) {
      for (const run of t.runs) {
        const data = await getJson<TextSeriesResponse>("/api/views/text/series", { run, tag: t.tag });
        const card = h("section", { class: "card text-card", "data-tag": t.tag, "data-run": run }, h("div", { class: "card-head" }, h("h3", {}, `${t.tag} · ${run}`)));
        for (const r of data.records.slice().reverse()) {
          const body = h("div", { class: "markdown" });
          body.innerHTML = renderMarkdown(r.text); // safe: renderMarkdown escapes all input
          card.append(h("div", { class: "text-record" }, h("div", { class: "step" }, `step ${r.step}`), body));
        }
        grid.append(card);
      }
    }
  }
  void refresh();
  return { refresh: () => void refresh(), dispose: () => undefined };
}
