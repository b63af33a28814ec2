// The bench and target op traces side by side, grouped by module scope: matched ops on one
// line, ops that ran on one side only highlighted on that side. The server merges the traces
// and pages the visible lines (docs/http_api/comparison.md, GET /trace); this list is
// virtualised (fixed line height, only the lines in view are in the DOM), so a trace of
// tens of thousands of ops scrolls like a short one.
import { getJson, type Params } from "../../api/client";
import { h } from "../../core/state";
import { VERDICT_COLORS } from "./scale";
import type { SideOp, TraceLine, TracePage } from "./types";

const API = "/api/views/comparison/trace";
export const LINE_H = 22;
const PAGE = 200;
const OVERSCAN = 12;
const GLYPH: Record<string, string> = { matched: "=", partial: "≠", bench: "◀", target: "▶" };
const STATUS_TEXT: Record<string, string> = {
  matched: "matched",
  partial: "paired, but some tensors exist on one side only",
  bench: "only in bench",
  target: "only in target",
};

/** What a header says about the ops below it: "12 ops · 3 only in target". */
export function headerSummary(l: Pick<TraceLine, "ops" | "counts">): string {
  const parts = [`${l.ops} op${l.ops === 1 ? "" : "s"}`];
  if (l.counts.bench) parts.push(`${l.counts.bench} only in bench`);
  if (l.counts.target) parts.push(`${l.counts.target} only in target`);
  if (l.counts.partial) parts.push(`${l.counts.partial} partly paired`);
  if (parts.length === 1 && l.ops > 0) parts.push("all matched");
  return parts.join(" · ");
}

/** An op name as the traces show it: ATen's `aten.` and `.default` dropped (the title keeps it whole). */
export function shortOp(op: string): string {
  return op.startsWith("aten.") ? op.slice(5).replace(/\.default$/, "") : op;
}

/** The next (dir 1) or previous (dir -1) difference from line `from`, or null. */
export function nextDiff(diffs: number[], from: number, dir: 1 | -1): number | null {
  if (dir > 0) return diffs.find((d) => d > from) ?? null;
  for (let i = diffs.length - 1; i >= 0; i--) if ((diffs[i] as number) < from) return diffs[i] as number;
  return null;
}

function sideCell(l: TraceLine, which: "bench" | "target"): HTMLElement {
  const cell = h("div", { class: `cmp-sbs-cell ${which}` });
  cell.style.paddingLeft = `${6 + l.depth * 14}px`;
  const present = l.side === "both" || l.side === which;
  if (!present) {
    cell.classList.add("absent");
    return cell;
  }
  if (l.kind !== "op") {
    const caret = h("span", { class: "cmp-sbs-caret" }, l.folded ? "▸" : "▾");
    cell.append(caret, h("span", { class: "cmp-sbs-label" }, l.kind === "direction" ? l.label : l.label || "(root)"), h("span", { class: "muted cmp-sbs-sum" }, ` ${headerSummary(l)}`));
    if (l.side !== "both") cell.append(h("span", { class: `cmp-sbs-only ${which}` }, `only in ${which}`));
    return cell;
  }
  const s = (which === "bench" ? l.bench : l.target) as SideOp;
  const other = which === "bench" ? l.target : l.bench;
  const dt = h("span", { class: "dt" }, s.dtype ?? "?");
  if (other && other.dtype !== s.dtype) dt.classList.add("differ");
  cell.append(
    h("span", { class: "muted cmp-sbs-idx" }, s.index === null ? "" : `#${s.index} `),
    h("span", { class: "cmp-sbs-op", title: s.op }, shortOp(s.op)),
    dt,
    h("span", { class: "muted cmp-sbs-shape" }, s.shape ? ` [${s.shape.join(",")}]` : ""),
  );
  if (which === "target" && l.moved) cell.append(h("span", { class: "cmp-sbs-moved", title: "runs in another order on the target side" }, " ↕ reordered"));
  return cell;
}

function gutter(l: TraceLine): HTMLElement {
  const chip = h("span", { class: "cmp-chip", title: `worst verdict: ${l.verdict}` });
  chip.style.background = VERDICT_COLORS[l.verdict] ?? "#999";
  const g = h("div", { class: "cmp-sbs-gutter" }, chip);
  if (l.kind === "op") g.append(h("span", { class: `cmp-sbs-glyph st-${l.status}` }, GLYPH[l.status] ?? "?"));
  return g;
}

export function lineElement(l: TraceLine): HTMLElement {
  const el = h("div", {
    class: `cmp-sbs-line ${l.kind} st-${l.status} side-${l.side}`,
    "data-line": String(l.line), "data-id": String(l.id), "data-kind": l.kind,
    "data-status": l.status, "data-side": l.side, "data-position": String(l.position),
  });
  el.style.top = `${l.line * LINE_H}px`;
  const where = l.path ? ` in ${l.path}` : "";
  el.title = l.kind === "op"
    ? `${STATUS_TEXT[l.status] ?? l.status}${where} · ${l.verdict}${l.reason ? ` — ${l.reason}` : ""}\nclick: open it in the table`
    : `${l.path || l.label}: ${headerSummary(l)} · worst verdict ${l.verdict}\nclick: ${l.folded ? "unfold" : "fold"}`;
  el.append(sideCell(l, "bench"), gutter(l), sideCell(l, "target"));
  return el;
}

export class SideBySide {
  readonly el: HTMLElement;
  private name = "";
  private direction = "";
  private fold: "clean" | "none" = "clean";
  private toggles = new Set<number>();
  private readonly lines = new Map<number, TraceLine>();
  private readonly pages = new Set<number>();
  private gen = 0;
  private total = 0;
  private diffs: number[] = [];
  private truncated = false;
  private counts: Record<string, number> = {};
  private selectedId: number | null = null;
  private focus: number | null = null;
  private raf = 0;
  private readonly summary = h("span", { class: "cmp-sbs-summary", id: "cmp-sbs-summary" });
  private readonly diffNav = h("span", { class: "cmp-sbs-diffnav", id: "cmp-sbs-diffnav" });
  private readonly foldBox = h("input", { type: "checkbox", id: "cmp-sbs-fold" });
  private readonly message = h("div", { class: "muted cmp-sbs-message", id: "cmp-sbs-message" });
  private readonly where = h("div", { class: "cmp-sbs-where", id: "cmp-sbs-where" });
  private readonly benchHead = h("div", { class: "cmp-sbs-headcell" });
  private readonly targetHead = h("div", { class: "cmp-sbs-headcell" });
  private readonly scroll = h("div", { class: "cmp-sbs-scroll", id: "cmp-sbs-scroll" });
  private readonly spacer = h("div", { class: "cmp-sbs-spacer" });

  constructor(private readonly onSelect: (position: number) => void) {
    this.foldBox.checked = true;
    this.foldBox.addEventListener("change", () => {
      this.fold = this.foldBox.checked ? "clean" : "none";
      this.toggles.clear();
      this.reload();
    });
    const legend = h("span", { class: "cmp-sbs-legend muted" },
      h("span", { class: "cmp-sbs-swatch bench" }), "only in bench ",
      h("span", { class: "cmp-sbs-swatch target" }), "only in target ",
      h("span", { class: "cmp-sbs-swatch absent" }), "not on this side ",
      h("span", { class: "dt differ" }, "dtype"), " differs");
    this.el = h("section", { class: "cmp-sbs", id: "cmp-sbs" },
      h("div", { class: "cmp-sbs-bar" }, this.summary, this.diffNav,
        h("label", { title: "scopes whose ops all matched start folded" }, this.foldBox, "fold identical scopes"), legend),
      this.message,
      this.where,
      h("div", { class: "cmp-sbs-head" }, this.benchHead, h("div", {}, ""), this.targetHead),
      this.scroll);
    this.scroll.append(this.spacer);
    this.scroll.addEventListener("scroll", () => this.schedule());
    this.scroll.addEventListener("click", (ev) => this.click(ev));
  }

  /** Show comparison `name`; folds and selection start afresh. */
  open(name: string, bench: string, target: string, direction: string): void {
    this.name = name;
    this.direction = direction;
    this.toggles.clear();
    this.selectedId = null;
    this.focus = null;
    this.benchHead.textContent = `bench · ${bench}`;
    this.benchHead.title = bench;
    this.targetHead.textContent = `target · ${target}`;
    this.targetHead.title = target;
    this.scroll.scrollTop = 0;
    this.reload();
  }

  setDirection(direction: string): void {
    if (direction === this.direction) return;
    this.direction = direction;
    this.focus = null;
    this.scroll.scrollTop = 0;
    this.reload();
  }

  /** Scroll to the op holding row `position`, unfolding what hides it, and mark it. */
  async jump(position: number): Promise<boolean> {
    const g = this.invalidate();
    const page = await getJson<TracePage>(API, { ...this.params(0, PAGE), at: position });
    if (g !== this.gen) return false;
    this.toggles = new Set(page.toggles);
    this.apply(page);
    if (page.focus === null) {
      this.message.textContent = `Row ${position} is hidden by the direction filter.`;
      this.draw();
      return false;
    }
    this.focus = page.focus;
    this.selectedId = this.lines.get(page.focus)?.id ?? null;
    this.scrollTo(page.focus);
    return true;
  }

  private params(offset: number, limit: number): Params {
    const p: Params = { name: this.name, fold: this.fold, offset, limit };
    if (this.direction) p.direction = this.direction;
    if (this.toggles.size) p.toggle = [...this.toggles].sort((a, b) => a - b).join(",");
    return p;
  }

  private invalidate(): number {
    this.lines.clear();
    this.pages.clear();
    this.message.textContent = "";
    return ++this.gen;
  }

  private reload(): void {
    this.invalidate();
    this.draw();
  }

  private apply(page: TracePage): void {
    this.total = page.total;
    this.diffs = page.diffs;
    this.truncated = page.diffs_truncated;
    this.counts = page.counts;
    for (const l of page.lines) this.lines.set(l.line, l);
    this.spacer.style.height = `${this.total * LINE_H}px`;
    this.renderBar();
  }

  private fetchPage(p: number): void {
    this.pages.add(p);
    const g = this.gen;
    getJson<TracePage>(API, this.params(p * PAGE, PAGE))
      .then((page) => {
        if (g !== this.gen) return;
        this.apply(page);
        this.draw();
      })
      .catch((err: unknown) => {
        if (g !== this.gen) return;
        this.pages.delete(p);
        this.message.textContent = String(err instanceof Error ? err.message : err);
        this.message.classList.add("error-text");
      });
  }

  private schedule(): void {
    if (this.raf) return;
    this.raf = requestAnimationFrame(() => {
      this.raf = 0;
      this.draw();
    });
  }

  private draw(): void {
    const top = this.scroll.scrollTop;
    const height = this.scroll.clientHeight || 400;
    const first = Math.max(0, Math.floor(top / LINE_H) - OVERSCAN);
    const last = Math.floor((top + height) / LINE_H) + OVERSCAN;
    const end = this.total ? Math.min(this.total, last) : last;
    for (let p = Math.floor(first / PAGE); p <= Math.floor(Math.max(first, end - 1) / PAGE); p++) {
      if (!this.pages.has(p)) this.fetchPage(p);
    }
    const shown: HTMLElement[] = [];
    for (let k = first; k < end && k < this.total; k++) {
      const l = this.lines.get(k);
      if (!l) {
        const ph = h("div", { class: "cmp-sbs-line loading" }, "…");
        ph.style.top = `${k * LINE_H}px`;
        shown.push(ph);
        continue;
      }
      const el = lineElement(l);
      if (l.id === this.selectedId) el.classList.add("selected");
      if (k === this.focus) el.classList.add("focus");
      shown.push(el);
    }
    this.spacer.replaceChildren(...shown);
    // where the first line in view sits, since its headers may have scrolled away
    const topLine = this.lines.get(Math.floor(top / LINE_H));
    this.where.textContent = topLine ? `${topLine.direction}${topLine.path ? ` › ${topLine.path.split(".").join(" › ")}` : ""}` : "";
  }

  private scrollTo(line: number): void {
    const height = this.scroll.clientHeight || 400;
    this.scroll.scrollTop = Math.max(0, line * LINE_H - height / 3);
    this.draw();
  }

  private click(ev: Event): void {
    const el = (ev.target as HTMLElement).closest<HTMLElement>(".cmp-sbs-line");
    const l = el ? this.lines.get(Number(el.dataset.line)) : undefined;
    if (!l) return;
    if (l.kind === "op") {
      this.selectedId = l.id;
      this.focus = l.line;
      this.draw();
      this.onSelect(l.position);
      return;
    }
    if (this.toggles.has(l.id)) this.toggles.delete(l.id);
    else this.toggles.add(l.id);
    this.focus = l.line;
    this.reload();
  }

  private renderBar(): void {
    const c = this.counts;
    const same = !this.diffs.length && (c.matched ?? 0) === (c.bench_ops ?? 0) && (c.matched ?? 0) === (c.target_ops ?? 0);
    this.summary.replaceChildren(
      same
        ? h("b", { class: "cmp-sbs-same" }, `Same structure: all ${c.matched ?? 0} ops matched one to one.`)
        : h("span", {}, h("b", {}, `bench ${c.bench_ops ?? 0} ops · target ${c.target_ops ?? 0} ops`),
          ` · ${c.matched ?? 0} matched · ${c.bench ?? 0} only in bench · ${c.target ?? 0} only in target${c.partial ? ` · ${c.partial} partly paired` : ""}`),
    );
    const prev = h("button", { type: "button", id: "cmp-sbs-prev", title: "previous difference" }, "◀");
    const next = h("button", { type: "button", id: "cmp-sbs-next", title: "next difference" }, "▶");
    const at = this.focus ?? Math.floor(this.scroll.scrollTop / LINE_H) - 1;
    const k = this.diffs.indexOf(this.focus ?? -1);
    prev.disabled = nextDiff(this.diffs, at, -1) === null;
    next.disabled = nextDiff(this.diffs, at, 1) === null;
    const go = (dir: 1 | -1): void => {
      const from = this.focus ?? Math.floor(this.scroll.scrollTop / LINE_H) - 1;
      const d = nextDiff(this.diffs, from, dir);
      if (d === null) return;
      this.focus = d;
      this.selectedId = null;
      this.scrollTo(d);
      this.renderBar();
    };
    prev.addEventListener("click", () => go(-1));
    next.addEventListener("click", () => go(1));
    const n = `${this.diffs.length}${this.truncated ? "+" : ""}`;
    const label = !this.diffs.length ? "no differences shown" : k >= 0 ? `difference ${k + 1} of ${n}` : `${n} differences`;
    this.diffNav.replaceChildren(prev, h("span", { class: "muted" }, ` ${label} `), next);
  }

  dispose(): void {
    if (this.raf) cancelAnimationFrame(this.raf);
    this.gen++;
  }
}
