// The run list: regex filter, select/overlay, colours, first/last write time, tags, status.
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

export class RunList {
  private readonly list: HTMLElement;
  private readonly filter: HTMLInputElement;
  private readonly error: HTMLElement;

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
    this.list.replaceChildren();
    for (const run of this.state.runs) {
      if (!shown.has(run.name)) continue;
      const box = h("input", { type: "checkbox", "data-run": run.name });
      box.checked = this.state.selected.has(run.name);
      box.addEventListener("change", () => this.state.setSelected(run.name, box.checked));
      const color = h("input", { type: "color", class: "swatch", value: this.state.color(run.name), title: "run colour" });
      color.addEventListener("input", () => this.state.setColor(run.name, color.value));
      const status = h("span", { class: run.active ? "badge active" : "badge finished" }, run.active ? "active" : "finished");
      const dropped = Object.entries(run.dropped);
      const item = h(
        "li",
        { class: "run", "data-run": run.name },
        h("label", {}, box, color, h("span", { class: "run-name" }, run.name)),
        h(
          "div",
          { class: "run-meta" },
          status,
          ` ${run.tag_count} tags · ${formatWallTime(run.first_wall_time)} → ${formatWallTime(run.last_wall_time)}`,
        ),
      );
      if (dropped.length) {
        item.append(
          h("div", { class: "warn-text" }, `dropped by limits: ${dropped.map(([k, v]) => `${v} ${k}`).join(", ")}`),
        );
      }
      this.list.append(item);
    }
  }
}
