// The run list: regex filter, select/overlay, colours, first/last write time, tags, status.
// Past VIRTUAL_FROM shown runs only the rows in view (and a few beyond) are in the DOM, so a
// 1,000-run sweep scrolls and updates as a 30-row list does.
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

/** Shown runs from which the list draws only the rows in view. Below it every row is in
 * the DOM (the browser's find-in-page sees every run name). */
export const VIRTUAL_FROM = 200;
/** The height of a row of a virtual list, px (fixed there: long names are cut with an
 * ellipsis and a tooltip, dropped counts are a badge). */
export const ROW_HEIGHT = 44;
/** Rows drawn above and below the ones in view. */
const OVERSCAN = 8;

/** The rows ``[first, end)`` of ``total`` to draw when ``top`` px of the list are scrolled
 * past and ``height`` px of it are in view (``top`` may be negative: the list starts lower). */
export function rowWindow(total: number, top: number, height: number, rowHeight = ROW_HEIGHT, overscan = OVERSCAN): [number, number] {
  const first = Math.max(0, Math.floor(top / rowHeight) - overscan);
  const last = Math.ceil((top + Math.max(height, 0)) / rowHeight) + overscan;
  return [Math.min(first, total), Math.max(Math.min(last, total), Math.min(first, total))];
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
  /** Rows by run name, kept between renders: a selection change updates checkboxes instead
   * of rebuilding rows. A virtual list keeps those near the view only. */
  private readonly rows = new Map<string, Row>();
  /** The runs the filter shows, in order. */
  private names: string[] = [];
  private index = new Map<string, number>();
  private runs = new Map<string, RunEntry>();
  /** The rows in the DOM, in order. */
  private attached: HTMLLIElement[] = [];
  private frame = 0;

  constructor(
    private readonly parent: HTMLElement,
    private readonly state: BoardState,
  ) {
    this.filter = h("input", { type: "search", placeholder: "filter runs (regex)", id: "run-filter" });
    this.error = h("div", { class: "error-text" });
    const all = h("button", { type: "button", id: "runs-all" }, "all");
    const none = h("button", { type: "button", id: "runs-none" }, "none");
    this.list = h("ul", { class: "run-list", id: "run-list", "aria-label": "runs" });
    parent.append(h("h2", {}, "Runs"), this.filter, this.error, h("div", { class: "row" }, all, none), this.list);
    this.filter.addEventListener("input", () => this.render());
    all.addEventListener("click", () => this.state.setAll(this.visible(), true));
    none.addEventListener("click", () => this.state.setAll(this.visible(), false));
    parent.addEventListener("scroll", () => this.schedule(), { passive: true });
    window.addEventListener("resize", () => this.schedule());
    this.list.addEventListener("keydown", (e) => this.onKey(e));
  }

  visible(): string[] {
    const re = compileRegex(this.filter.value);
    return this.state.runs.map((r) => r.name).filter((n) => re === null || re.test(n));
  }

  /** Whether only the rows in view are drawn. */
  get virtual(): boolean {
    return this.names.length >= VIRTUAL_FROM;
  }

  render(): void {
    const re = compileRegex(this.filter.value);
    this.error.textContent = re === null ? "invalid regular expression" : "";
    this.names = this.visible();
    this.index = new Map(this.names.map((n, i) => [n, i]));
    this.runs = new Map(this.state.runs.map((r) => [r.name, r]));
    this.list.dataset.total = String(this.names.length);
    this.list.classList.toggle("virtual", this.virtual);
    for (const name of [...this.rows.keys()]) if (!this.runs.has(name)) this.rows.delete(name);
    this.draw();
  }

  private schedule(): void {
    if (!this.virtual || this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.draw();
    });
  }

  /** The rows to draw: all of them, or those of a virtual list near the view. */
  private range(): [number, number] {
    if (!this.virtual) return [0, this.names.length];
    // the sidebar is positioned: offsetTop is the list's place in its scrolled content
    const top = this.parent.scrollTop - this.list.offsetTop;
    return rowWindow(this.names.length, top, this.parent.clientHeight);
  }

  private row(name: string): Row {
    const run = this.runs.get(name) as RunEntry;
    const key = rowKey(run, this.state.loading);
    let row = this.rows.get(name);
    if (!row || row.key !== key) {
      row = this.makeRow(run, key);
      this.rows.set(name, row);
    }
    row.box.checked = this.state.selected.has(name);
    const color = this.state.color(name);
    if (row.color.value !== color) row.color.value = color;
    return row;
  }

  /** The run whose checkbox or colour has keyboard focus, and which of the two. */
  private focusedRun(): { name: string; part: "box" | "color" } | null {
    const el = document.activeElement;
    if (!(el instanceof HTMLInputElement) || !this.list.contains(el)) return null;
    const name = el.closest<HTMLElement>("li.run")?.dataset.run;
    if (name === undefined) return null;
    return { name, part: el.type === "color" ? "color" : "box" };
  }

  private draw(): void {
    const [first, end] = this.range();
    const names = this.names.slice(first, end);
    // a focused row scrolled out of the window stays in the DOM (at its own place, out of
    // view), so keyboard focus survives scrolling: Space still toggles it, arrows move on
    const focus = this.focusedRun();
    const at = focus ? this.index.get(focus.name) : undefined;
    if (focus && at !== undefined && (at < first || at >= end)) {
      if (at < first) names.unshift(focus.name);
      else names.push(focus.name);
    }
    const drawn = names.map((n) => this.row(n));
    const virtual = this.virtual;
    // a virtual list is as tall as all its rows, each drawn at its own place: moving the
    // window changes nothing above the view, so the browser never moves the scroll position
    this.list.style.height = virtual ? `${this.names.length * ROW_HEIGHT}px` : "";
    this.list.dataset.first = String(first);
    if (virtual) {
      drawn.forEach((row, i) => {
        const place = this.index.get(names[i]!) ?? first + i;
        row.item.style.top = `${place * ROW_HEIGHT}px`;
        row.item.setAttribute("aria-posinset", String(place + 1));
        row.item.setAttribute("aria-setsize", String(this.names.length));
      });
      // rows far from the view are dropped: they are made again when scrolled back to
      if (this.rows.size > 4 * (end - first) + 64) {
        const near = new Set(names);
        for (const name of [...this.rows.keys()]) if (!near.has(name)) this.rows.delete(name);
      }
    }
    // only the rows that entered or left the window change in the DOM (scrolling a virtual
    // list moves a few rows a frame; the rest, and the focused checkbox, stay put)
    const want = drawn.map((row) => row.item);
    const keep = new Set(want);
    const focused = document.activeElement;
    for (const el of this.attached) if (!keep.has(el)) el.remove();
    let cursor: ChildNode | null = this.list.firstChild;
    for (const el of want) {
      if (el === cursor) {
        cursor = cursor.nextSibling;
        continue;
      }
      this.list.insertBefore(el, cursor);
    }
    this.attached = want;
    if (focused instanceof HTMLElement && focused !== document.activeElement && this.list.contains(focused)) focused.focus({ preventScroll: true });
    else if (focus && !this.list.contains(document.activeElement)) {
      // the focused row was made again (a new answer changed what it shows): focus its twin
      const row = this.rows.get(focus.name);
      if (row && this.list.contains(row.item)) row[focus.part].focus({ preventScroll: true });
    }
  }

  /** Arrow keys, Home and End move between runs' checkboxes (Space toggles, as checkboxes
   * do); in a virtual list the run moved to is scrolled into view and drawn first. */
  private onKey(e: KeyboardEvent): void {
    const target = e.target as HTMLElement;
    const name = target.closest<HTMLElement>("li.run")?.dataset.run;
    if (name === undefined || !(target instanceof HTMLInputElement) || target.type !== "checkbox") return;
    const at = this.index.get(name);
    if (at === undefined) return;
    const to = { ArrowDown: at + 1, ArrowUp: at - 1, Home: 0, End: this.names.length - 1 }[e.key];
    if (to === undefined) return;
    e.preventDefault();
    this.focusRun(Math.max(0, Math.min(to, this.names.length - 1)));
  }

  /** Scroll the ``i``-th shown run into view and focus its checkbox. */
  focusRun(i: number): void {
    const name = this.names[i];
    if (name === undefined) return;
    if (this.virtual) {
      const listTop = this.list.offsetTop;
      const rowTop = listTop + i * ROW_HEIGHT;
      const view = this.parent.clientHeight;
      if (i === 0) this.parent.scrollTop = 0; // the filter above the list comes back into view
      else if (rowTop < this.parent.scrollTop) this.parent.scrollTop = rowTop;
      else if (rowTop + ROW_HEIGHT > this.parent.scrollTop + view) this.parent.scrollTop = rowTop + ROW_HEIGHT - view;
      this.draw();
    }
    const row = this.rows.get(name);
    row?.box.focus({ preventScroll: this.virtual });
  }

  private makeRow(run: RunEntry, key: string): Row {
    const box = h("input", { type: "checkbox", "data-run": run.name });
    box.addEventListener("change", () => this.state.setSelected(run.name, box.checked));
    const color = h("input", { type: "color", class: "swatch", value: this.state.color(run.name), title: "run colour", tabindex: "-1" });
    color.addEventListener("input", () => this.state.setColor(run.name, color.value));
    const loading = this.state.loading && run.tag_count === 0;
    const status = loading
      ? h("span", { class: "badge loading" }, "reading")
      : h("span", { class: run.active ? "badge active" : "badge finished" }, run.active ? "active" : "finished");
    const dropped = Object.entries(run.dropped);
    const meta = loading
      ? " tags not read yet"
      : ` ${run.tag_count} tags · ${formatWallTime(run.first_wall_time)} → ${formatWallTime(run.last_wall_time)}`;
    const droppedText = `dropped by limits: ${dropped.map(([k, v]) => `${v} ${k}`).join(", ")}`;
    const metaLine = h("div", { class: "run-meta" }, status, meta);
    const item = h(
      "li",
      { class: "run", "data-run": run.name },
      h("label", {}, box, color, h("span", { class: "run-name", title: run.name }, run.name)),
      metaLine,
    );
    if (dropped.length) {
      // a fixed-height row has no room for a line of its own: a badge says it, its tooltip what
      metaLine.prepend(h("span", { class: "badge dropped", title: droppedText }, "dropped"), " ");
      item.append(h("div", { class: "warn-text run-dropped" }, droppedText));
    }
    return { item, box, color, key };
  }
}

function rowKey(run: RunEntry, loading: boolean): string {
  return JSON.stringify([loading && run.tag_count === 0, run.active, run.tag_count, run.first_wall_time, run.last_wall_time, run.dropped]);
}
