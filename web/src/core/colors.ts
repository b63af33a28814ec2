// Run colours: a fixed palette by position, overridable per run (remembered in localStorage).
export const PALETTE = [
  "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
  "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
];

export function defaultColor(index: number): string {
  return PALETTE[index % PALETTE.length] as string;
}
