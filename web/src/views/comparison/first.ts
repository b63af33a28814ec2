// The banner pinned on top of the comparison view: the first divergence with its reason,
// the advisor's sentences and, when ops ran on one side only before it, a note naming the
// first of them; or, when the runs agree, how many warnings are tensors without a counterpart.
import { h } from "../../core/state";
import type { Row, SummaryResponse } from "./types";

export interface FirstActions {
  inspect: (row: Row) => void; // open the drill-down
  locate: (row: { position: number; direction?: string }) => void; // its place side by side
  sides: () => void; // switch to the side-by-side traces
}

function upstreamNote(summary: SummaryResponse, a: FirstActions): HTMLElement[] {
  const up = summary.upstream;
  if (!up || !up.count || up.position === null) return [];
  const side = up.side === "partial" ? "partly paired" : `only in ${up.side}`;
  const show = h("button", { type: "button", id: "cmp-first-upstream" }, "show it");
  const position = up.position;
  show.addEventListener("click", () => a.locate({ position }));
  return [h("div", { class: "cmp-first-structure", id: "cmp-first-structure" },
    h("b", {}, "Structures differ before this op: "),
    `${up.count} op${up.count === 1 ? "" : "s"} ran on one side only, the first ${up.op} in ${up.module_path || "<root>"} (${side}). The error may come from that, not from rounding. `,
    show)];
}

export function renderFirstDivergence(el: HTMLElement, summary: SummaryResponse | null, a: FirstActions): void {
  const c = summary?.comparison;
  const row = summary?.first_divergence_row ?? null;
  if (!summary || !c) return el.replaceChildren();
  const note = c.incomplete ? `INCOMPLETE: ${c.incomplete}` : c.not_comparable ? `NOT COMPARABLE: ${c.not_comparable}` : null;
  if (!row && note) {
    el.className = "cmp-first diverged";
    el.replaceChildren(h("b", { id: "cmp-first-note" }, note), " The runs cannot be said to agree.");
    return;
  }
  if (!row) {
    el.className = "cmp-first agree";
    const odd = c.counts.unmatched ?? 0;
    const warn = c.counts.warning ?? 0;
    const why = odd ? `, ${odd === warn ? "all" : odd} of them tensors without a counterpart on the other side` : "";
    const neutral = c.counts.one_sided ? `; ${c.counts.one_sided} one-sided tensors (casts, detach, allocations) by design` : "";
    el.replaceChildren(h("b", {}, "No divergence: "), `every compared op stays within the error its dtypes explain (${warn} warnings${why}${neutral}).`);
    if (odd) {
      const b = h("button", { type: "button", id: "cmp-first-sides" }, "side by side");
      b.addEventListener("click", a.sides);
      el.append(" ", b);
    }
    return;
  }
  el.className = "cmp-first diverged";
  const open = h("button", { type: "button", id: "cmp-first-open" }, "inspect");
  open.addEventListener("click", () => a.inspect(row));
  const where = h("button", { type: "button", id: "cmp-first-locate", title: "show it in the side-by-side op traces" }, "side by side");
  where.addEventListener("click", () => a.locate(row));
  const advice = c.advice.filter((x) => x.row === row.position || x.row === null).concat(c.advice.filter((x) => x.row !== null && x.row !== row.position));
  el.replaceChildren(
    h("div", { class: "cmp-first-head" },
      h("span", { class: "cmp-first-label" }, "First divergence"),
      h("span", { class: "cmp-first-op" }, `${row.op} [${row.direction}] ${row.tensor}`),
      h("span", { class: "muted" }, ` in ${row.module_path || "<root>"} · index ${String(row.index ?? "–")}${c.ranks.length > 1 ? ` · rank ${String(row.rank)}` : ""}`),
      h("span", { class: "cmp-first-actions" }, where, open)),
    h("div", { class: "cmp-first-reason" }, row.reason),
    ...(note ? [h("div", { class: "cmp-first-reason", id: "cmp-first-note" }, note)] : []),
    ...upstreamNote(summary, a),
    ...advice.slice(0, 3).map((x) => h("div", { class: "cmp-first-advice" }, h("b", {}, `${x.mechanism}: `), x.evidence)),
  );
}
