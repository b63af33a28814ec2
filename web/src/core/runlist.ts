// The run list: regex filter, select/overlay, colours, first/last write time, tags, status.
import type { RunEntry } from "../api/types";
import type { BoardState } from "./state";
import { h } from "./state";
import { formatWallTime } from "./format";

export function compileRegex(text: string): RegExp | null {
  try {
    return new RegExp(text, "i");
  } catch {
    return null;
  }
}

interface Row {
  item: HTMLLIElement;
  box: HTMLInputElement;
  color: HTMLInputElement;
  /** What the row shows besides the selection and the colour: a new answer redraws it. */
  key: string;
}

export class RunList {
  private readonly list: HTMLElement;
  private readonly filter: HTMLInputElement;
  private readonly error: HTMLElement;
  /** Rows by run name, kept between renders: a selection change of a 1,000-run sweep
   * updates checkboxes instead of rebuilding 1,000 rows (each render did, ~0.3 s). */
  private readonly rows = new Map<string, Row>();
  private shownKey = "";

  constructor(
    parent: HTMLElement,
    private readonly state: BoardState,
  ) {
    this.filter = h("input", { type: "search", placeholder: "filter runs (regex)", id: "run-filter" });
    this.error = h("div", { class: "error-text" });
    const all = h("button", { type: "button", id: "runs-all" }, "all");
    const none = h("button", { type: "button", id: "runs-none" }, "none");
    this.list = h("ul", { class: "run-list", id: "run-list" });
    parent.append(h("h2", {}, "Runs"), this.filter, this.error, h("div", { class: "row" }, all, none), this.list);
    this.filter.addEventListener("input", () => this.render());
    all.addEventListener("click", () => this.state.setAll(this.visible(), true));
    none.addEventListener("click", () => this.state.setAll(this.visible(), false));
  }

  visible(): string[] {
    const re = compileRegex(this.filter.value);
    return this.state.runs.map((r) => r.name).filter((n) => re === null || re.test(n));
  }

  render(): void {
    const re = compileRegex(this.filter.value);
    this.error.textContent = re === null ? "invalid regular expression" : "";
    const shown = new Set(this.visible());
    const names: string[] = [];
    const keep = new Set<string>();
    for (const run of this.state.runs) {
      keep.add(run.name);
      const key = rowKey(run, this.state.loading);
      let row = this.rows.get(run.name);
      if (!row || row.key !== key) {
        row = this.makeRow(run, key);
        this.rows.set(run.name, row);
      }
      row.box.checked = this.state.selected.has(run.name);
      const color = this.state.color(run.name);
      if (row.color.value !== color) row.color.value = color;
      if (shown.has(run.name)) names.push(run.name);
    }
    for (const name of [...this.rows.keys()]) if (!keep.has(name)) this.rows.delete(name);
    // the same rows in the same order: leave the list alone (no relayout of 1,000 rows)
    const shownKey = names.map((n) => `${n}\u0000${this.rows.get(n)?.key ?? ""}`).join("\u0001");
    if (shownKey === this.shownKey && this.list.childElementCount === names.length) return;
    this.shownKey = shownKey;
    const frag = document.createDocumentFragment();
    for (const n of names) frag.append((this.rows.get(n) as Row).item);
    this.list.replaceChildren(frag);
  }

  private makeRow(run: RunEntry, key: string): Row {
    const box = h("input", { type: "checkbox", "data-run": run.name });
    box.addEventListener("change", () => this.state.setSelected(run.name, box.checked));
    const color = h("input", { type: "color", class: "swatch", value: this.state.color(run.name), title: "run colour" });
    color.addEventListener("input", () => this.state.setColor(run.name, color.value));
    const loading = this.state.loading && run.tag_count === 0;
    const status = loading
      ? h("span", { class: "badge loading" }, "reading")
      : h("span", { class: run.active ? "badge active" : "badge finished" }, run.active ? "active" : "finished");
    const dropped = Object.entries(run.dropped);
    const meta = loading
      ? " tags not read yet"
      : ` ${run.tag_count} tags · ${formatWallTime(run.first_wall_time)} → ${formatWallTime(run.last_wall_time)}`;
    const item = h(
      "li",
      { class: "run", "data-run": run.name },
      h("label", {}, box, color, h("span", { class: "run-name" }, run.name)),
      h("div", { class: "run-meta" }, status, meta),
    );
    if (dropped.length) {
      item.append(h("div", { class: "warn-text" }, `dropped by limits: ${dropped.map(([k, v]) => `${v} ${k}`).join(", ")}`));
    }
    return { item, box, color, key };
  }
}

function rowKey(run: RunEntry, loading: boolean): string {
  return JSON.stringify([loading && run.tag_count === 0, run.active, run.tag_count, run.first_wall_time, run.last_wall_time, run.dropped]);
}
