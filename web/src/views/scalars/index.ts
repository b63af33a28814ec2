// Scalars view: toolbar (tag regex, smoothing, log y, x axis, compose) + one card per tag.
import { getJson } from "../../api/client";
import type { TagEntry } from "../../api/types";
import type { XKind } from "../../core/chart";
import { compileRegex } from "../../core/runlist";
import { h, type ViewContext, type ViewInstance } from "../../core/state";
import { ScalarCard, type ScalarSettings } from "./card";

/** Cards loading at once (each a request per 500 runs). One: the server shares one GIL
 * between requests, so a second card's requests only slowed the first card's (1,000-run
 * sweep, load ~6 on 2 cores: first chart 0.99 s after the read with one, 1.92 s with two,
 * medians of 3). */
const MAX_LOADS = 1;

export function render(el: HTMLElement, ctx: ViewContext): ViewInstance {
  const settings: ScalarSettings = { smoothing: 0.6, yLog: false, xKind: "step" };
  const tagFilter = h("input", { type: "search", id: "tag-filter", placeholder: "filter tags (regex)" });
  const smoothing = h("input", { type: "range", id: "smoothing", min: "0", max: "0.99", step: "0.01", value: String(settings.smoothing) });
  const smoothingLabel = h("span", { id: "smoothing-value" }, String(settings.smoothing));
  const yScale = h("select", { id: "y-scale" }, h("option", { value: "linear" }, "linear y"), h("option", { value: "log" }, "log y"));
  const xAxis = h(
    "select",
    { id: "x-axis" },
    h("option", { value: "step" }, "step"),
    h("option", { value: "relative" }, "relative time"),
    h("option", { value: "wall_time" }, "wall time"),
  );
  const composeA = h("select", { id: "compose-a" });
  const composeB = h("select", { id: "compose-b" });
  const composeAdd = h("button", { type: "button", id: "compose-add" }, "compose");
  const message = h("p", { class: "muted", id: "scalars-message" });
  const grid = h("div", { class: "cards", id: "scalar-cards" });
  el.append(
    h(
      "div",
      { class: "toolbar" },
      tagFilter,
      h("label", {}, "smoothing ", smoothing, smoothingLabel),
      yScale,
      h("label", {}, "x ", xAxis),
      h("span", { class: "compose" }, "two tags: ", composeA, composeB, composeAdd),
    ),
    message,
    grid,
  );

  const cards = new Map<string, ScalarCard>();
  const composed: [string, string][] = [];
  let tags: TagEntry[] = [];
  let timer = 0;

  const source = { settings: () => settings, color: (run: string) => ctx.state.color(run) };
  // Cards load when they come into view and stay there a moment, so scrolling past many
  // charts does not fetch and draw every one of them.
  const pending = new Map<ScalarCard, number>();
  // The cards on screen when the tags arrive load at once; later ones (scrolled to) after
  // the pause above.
  let settled = false;
  const observer = new IntersectionObserver(
    (entries) => {
      for (const entry of entries) {
        const card = cards.get((entry.target as HTMLElement).dataset.key ?? "");
        if (!card) continue;
        card.visible = entry.isIntersecting;
        window.clearTimeout(pending.get(card));
        pending.delete(card);
        if (card.visible && card.needsLoad()) {
          if (!settled) {
            enqueue(card);
            continue;
          }
          pending.set(
            card,
            window.setTimeout(() => {
              pending.delete(card);
              if (card.visible && card.needsLoad()) enqueue(card);
            }, 120),
          );
        }
      }
      window.setTimeout(() => (settled = true), 300);
    },
    { rootMargin: "100px" },
  );

  // Loads run one card at a time, the card highest on the page first: with 1,000 runs a
  // chart is 2 requests of 500 series, and the first chart must not wait for the others'.
  const queue = new Set<ScalarCard>();
  const position = new Map<ScalarCard, number>();
  let running = 0;
  function enqueue(card: ScalarCard): void {
    queue.add(card);
    pump();
  }
  function pump(): void {
    while (running < MAX_LOADS && queue.size) {
      let next: ScalarCard | undefined;
      for (const card of queue) {
        if (!next || (position.get(card) ?? 0) < (position.get(next) ?? 0)) next = card;
      }
      const card = next as ScalarCard;
      // while the server still reads the logdir, only the top chart loads (again at each
      // new part of the read); the others wait for the read's end, so that their requests
      // neither slow the read nor hold the queue when the full data comes
      if (ctx.state.loading && (position.get(card) ?? 0) > 0) {
        for (const waiting of queue) waiting.waiting("drawn when the logdir is read…");
        break;
      }
      queue.delete(card);
      if (!card.visible) {
        void card.load(); // marks it for loading when it comes into view
        continue;
      }
      running++;
      void card.load().finally(() => {
        running--;
        pump();
      });
    }
  }

  function runsByTag(names: string[]): Map<string, string[]> {
    const m = new Map<string, string[]>();
    for (const name of names) m.set(name, tags.find((t) => t.tag === name)?.runs ?? []);
    return m;
  }

  function layout(): void {
    const re = compileRegex(tagFilter.value);
    tagFilter.classList.toggle("invalid", re === null);
    const wanted: [string, [string] | [string, string]][] = [];
    for (const [a, b] of composed) wanted.push([`compose:${a}|${b}`, [a, b]]);
    for (const t of tags) if (re === null || re.test(t.tag)) wanted.push([t.tag, [t.tag]]);
    const keys = new Set(wanted.map(([k]) => k));
    for (const [key, card] of cards) {
      if (!keys.has(key)) {
        observer.unobserve(card.el);
        card.chart.destroy();
        card.el.remove();
        cards.delete(key);
      }
    }
    grid.replaceChildren();
    position.clear();
    for (const [key, names] of wanted) {
      let card = cards.get(key);
      if (!card) {
        card = new ScalarCard(key, names, runsByTag(names), source);
        cards.set(key, card);
        observer.observe(card.el);
      } else {
        card.runs = runsByTag(names);
      }
      position.set(card, position.size);
      grid.append(card.el);
    }
    const shown = wanted.length - composed.length;
    const extra = composed.length ? ` + ${composed.length} composed` : "";
    message.textContent = tags.length
      ? `${shown} of ${tags.length} tags shown${extra} · drag on a chart to zoom`
      : ctx.state.loading
        ? "Reading the logdir… the charts come when it is read."
        : "No scalar tags in the selected runs.";
    for (const select of [composeA, composeB]) {
      const keep = select.value;
      select.replaceChildren(...tags.map((t) => h("option", { value: t.tag }, t.tag)));
      if (tags.some((t) => t.tag === keep)) select.value = keep;
    }
    if (composeB.selectedIndex === 0 && tags.length > 1 && !composeB.dataset.touched) composeB.selectedIndex = 1;
  }

  function reloadAll(resetZoom = false): void {
    for (const card of cards.values()) {
      if (resetZoom) card.resetZoom();
      enqueue(card);
    }
  }

  let tagSeq = 0;
  async function fetchTags(): Promise<void> {
    const seq = ++tagSeq;
    const runs = ctx.state.selectedRuns();
    const got = runs.length ? (await getJson<{ tags: TagEntry[] }>("/api/views/scalars/tags", { run: runs })).tags : [];
    if (seq !== tagSeq) return; // a newer selection or data asked again
    tags = got;
    layout();
    reloadAll();
  }

  tagFilter.addEventListener("input", () => layout());
  smoothing.addEventListener("input", () => {
    settings.smoothing = Number(smoothing.value);
    smoothingLabel.textContent = smoothing.value;
    window.clearTimeout(timer);
    timer = window.setTimeout(() => reloadAll(), 60);
  });
  yScale.addEventListener("change", () => {
    settings.yLog = yScale.value === "log";
    reloadAll(true);
  });
  xAxis.addEventListener("change", () => {
    settings.xKind = xAxis.value as XKind;
    reloadAll(true);
  });
  composeB.addEventListener("change", () => (composeB.dataset.touched = "1"));
  composeAdd.addEventListener("click", () => {
    const a = composeA.value;
    const b = composeB.value;
    if (!a || !b || a === b || composed.some(([x, y]) => x === a && y === b)) return;
    composed.push([a, b]);
    layout();
  });

  void fetchTags();
  return {
    refresh: () => void fetchTags(),
    dispose: () => {
      observer.disconnect();
      for (const card of cards.values()) card.chart.destroy();
    },
  };
}
