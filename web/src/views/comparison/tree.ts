// The module overlay: the op trace grouped by module hierarchy, each scope coloured by its
// worst child (verdict or the chosen metric); clicking a scope filters the table to it.
import { h } from "../../core/state";
import { badness, chipTint, fmtMetric, VERDICT_COLORS } from "./scale";
import type { ModuleNode } from "./types";

/** Scopes opened at first: the root's children and every scope on the way to a non-pass row. */
export function visibleTree(root: ModuleNode): Set<string> {
  const open = new Set<string>([root.path]);
  const walk = (n: ModuleNode, depth: number): void => {
    if (depth <= 1 || n.verdict !== "pass") open.add(n.path);
    for (const c of n.children) walk(c, depth + 1);
  };
  for (const c of root.children) walk(c, 1);
  return open;
}

export interface TreeOptions {
  colorBy: string; // "verdict" or a metric key
  range: [number, number] | null;
  higherIsBetter: boolean;
  selected: string | null;
  onSelect: (path: string | null, node: ModuleNode) => void;
}

function chip(n: ModuleNode, o: TreeOptions): HTMLElement {
  let color: string;
  let title: string;
  if (o.colorBy === "verdict") {
    color = VERDICT_COLORS[n.verdict] ?? "#999";
    title = `worst verdict: ${n.verdict}`;
  } else {
    color = n.value === null ? "#ddd" : chipTint(n.verdict, badness(n.value, o.colorBy, o.range, o.higherIsBetter));
    title = `worst ${o.colorBy}: ${fmtMetric(o.colorBy, n.value)} (worst verdict: ${n.verdict}; passing scopes stay pale green)`;
  }
  const el = h("span", { class: "cmp-chip", title });
  el.style.background = color;
  return el;
}

export function renderTree(el: HTMLElement, root: ModuleNode, o: TreeOptions, open: Set<string>): void {
  const list = h("ul", { class: "cmp-tree", id: "cmp-tree" });
  const item = (n: ModuleNode): HTMLElement => {
    const counts = [
      n.counts.error ? `${n.counts.error} err` : "",
      n.counts.warning ? `${n.counts.warning} warn` : "",
      n.counts.one_sided ? `${n.counts.one_sided} one-sided` : "",
    ].filter(Boolean).join(" · ");
    const label = h(
      "span",
      { class: "cmp-node" + (o.selected === n.path ? " selected" : ""), "data-path": n.path, "data-verdict": n.verdict },
      chip(n, o),
      h("span", { class: "cmp-node-name" }, n.path === "" ? "(all)" : n.name),
      h("span", { class: "muted" }, ` ${n.rows}${counts ? " · " + counts : ""}`),
    );
    label.title = n.path || "every row";
    label.addEventListener("click", (ev) => {
      ev.preventDefault();
      o.onSelect(n.path === "" || o.selected === n.path ? null : n.path, n);
    });
    if (!n.children.length) return h("li", { class: "leaf" }, label);
    const details = h("details", {}, h("summary", {}, label));
    details.open = open.has(n.path);
    details.addEventListener("toggle", () => {
      if (details.open) open.add(n.path);
      else open.delete(n.path);
    });
    const ul = h("ul", {});
    for (const c of n.children) ul.append(item(c));
    details.append(ul);
    return h("li", {}, details);
  };
  list.append(item(root));
  el.replaceChildren(list);
}
