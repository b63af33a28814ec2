// Tensors view: step slider, numpy-like slice query (sliced on the server), statistics, histogram.
import "./tables.css";
import { getJson, toNumber } from "../../api/client";
import { Latest } from "../../core/latest";
import type { JsonNumber, TagEntry } from "../../api/types";
import { h, type ViewContext, type ViewInstance } from "../../core/state";

interface Stats {
  count: number;
  min?: number;
  max?: number;
  mean?: number;
  std?: number;
  nan_count?: number;
  pos_inf_count?: number;
  neg_inf_count?: number;
  zero_count?: number;
  histogram?: { edges: number[]; counts: number[] };
}

interface SliceResponse {
  step: number;
  dtype: string;
  shape: number[];
  query: string;
  slice_shape: [number, number];
  truncated: boolean;
  values: (JsonNumber | boolean | string | null)[][];
  stats: Stats;
}

interface StepsResponse {
  records: { step: number; dtype: string; shape: number[] }[];
}

export function fmt(v: JsonNumber | boolean | string | null): string {
  if (typeof v === "boolean") return String(v);
  if (typeof v === "string" && v !== "NaN" && v !== "Infinity" && v !== "-Infinity") return v;
  const n = toNumber(v as JsonNumber);
  if (Number.isNaN(n)) return "NaN";
  if (!Number.isFinite(n)) return n > 0 ? "+Inf" : "-Inf";
  if (Number.isInteger(n) && Math.abs(n) < 1e15) return String(n);
  return Math.abs(n) >= 1e5 || (Math.abs(n) < 1e-3 && n !== 0) ? n.toExponential(4) : n.toPrecision(6);
}

function drawHistogram(canvas: HTMLCanvasElement, hist: Stats["histogram"]): void {
  const c = canvas.getContext("2d");
  if (!c) return;
  c.clearRect(0, 0, canvas.width, canvas.height);
  if (!hist) return;
  const max = Math.max(1, ...hist.counts);
  const w = canvas.width / hist.counts.length;
  c.fillStyle = "#4e79a7";
  hist.counts.forEach((n, i) => {
    const bh = ((canvas.height - 16) * n) / max;
    c.fillRect(i * w + 1, canvas.height - 14 - bh, w - 2, bh);
  });
  c.fillStyle = "#555";
  c.font = "10px sans-serif";
  c.fillText(fmt(hist.edges[0] ?? 0), 2, canvas.height - 2);
  const right = fmt(hist.edges[hist.edges.length - 1] ?? 0);
  c.fillText(right, canvas.width - c.measureText(right).width - 2, canvas.height - 2);
}

export function render(el: HTMLElement, ctx: ViewContext): ViewInstance {
  const pick = h("select", { id: "tensor-pick" });
  const slider = h("input", { type: "range", id: "tensor-step", min: "0", max: "0", value: "0" });
  const stepLabel = h("span", { id: "tensor-step-label" });
  const query = h("input", { type: "text", id: "tensor-query", placeholder: "slice, e.g. 0, 2:5" });
  const meta = h("div", { class: "muted", id: "tensor-meta" });
  const error = h("div", { class: "error-text", id: "tensor-error" });
  const statsEl = h("table", { class: "kv", id: "tensor-stats" });
  const hist = h("canvas", { id: "tensor-hist", width: "320", height: "120" });
  const body = h("table", { class: "data-table tensor-table", id: "tensor-table" });
  el.append(
    h("div", { class: "toolbar" }, h("label", {}, "tensor ", pick), h("label", {}, "step ", slider, stepLabel), h("label", {}, "slice ", query)),
    meta,
    error,
    h("div", { class: "tensor-body" }, h("div", { class: "table-wrap" }, body), h("div", { class: "tensor-side" }, h("h4", {}, "statistics (whole tensor)"), statsEl, h("h4", {}, "histogram (finite values)"), hist)),
  );
  let steps: StepsResponse["records"] = [];
  // the slider and the query each fetch a slice: only the newest request's answer is shown
  const latest = new Latest();

  async function loadSlice(useQuery: boolean): Promise<void> {
    const [run, tag] = JSON.parse(pick.value || '["",""]') as [string, string];
    const rec = steps[Number(slider.value)];
    if (!rec) return;
    stepLabel.textContent = String(rec.step);
    error.textContent = "";
    const ticket = latest.next();
    const sent = query.value;
    let r: SliceResponse;
    try {
      r = await getJson<SliceResponse>("/api/views/tensors/slice", { run, tag, step: rec.step, q: useQuery ? query.value : undefined });
    } catch (err) {
      if (latest.current(ticket)) error.textContent = (err as Error).message;
      return;
    }
    if (!latest.current(ticket)) return;
    // the answer spells the slice out in full, unless the user typed a new one meanwhile
    if (query.value === sent) query.value = r.query;
    meta.textContent = `${r.dtype}[${r.shape.join(", ")}] at step ${r.step} · slice [${r.query}] → ${r.slice_shape.join(" × ")}${r.truncated ? " (cut to the first 1000 × 200 cells)" : ""}`;
    const head = h("tr", {}, h("th", {}, ""));
    const cols = r.values[0]?.length ?? 0;
    for (let j = 0; j < cols; j++) head.append(h("th", {}, String(j)));
    const rows = r.values.map((row, i) => h("tr", {}, h("th", {}, String(i)), ...row.map((v) => h("td", { class: typeof v === "string" && v !== "" ? "nonfinite" : "" }, fmt(v)))));
    body.replaceChildren(h("thead", {}, head), h("tbody", {}, ...rows));
    body.dataset.cells = String(r.values.length * cols);
    const s = r.stats;
    const kv = (k: string, v: string): HTMLElement => h("tr", {}, h("th", {}, k), h("td", {}, v));
    statsEl.replaceChildren(
      kv("count", String(s.count)),
      kv("min", s.min === undefined ? "-" : fmt(s.min)),
      kv("max", s.max === undefined ? "-" : fmt(s.max)),
      kv("mean", s.mean === undefined ? "-" : fmt(s.mean)),
      kv("std", s.std === undefined ? "-" : fmt(s.std)),
      kv("NaN", String(s.nan_count ?? "-")),
      kv("+Inf", String(s.pos_inf_count ?? "-")),
      kv("-Inf", String(s.neg_inf_count ?? "-")),
      kv("zeros", String(s.zero_count ?? "-")),
    );
    drawHistogram(hist, s.histogram);
  }

  async function loadTag(): Promise<void> {
    const [run, tag] = JSON.parse(pick.value || '["",""]') as [string, string];
    steps = (await getJson<StepsResponse>("/api/views/tensors/steps", { run, tag })).records;
    slider.max = String(Math.max(0, steps.length - 1));
    slider.value = slider.max;
    await loadSlice(false);
  }

  slider.addEventListener("input", () => void loadSlice(true));
  query.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter") void loadSlice(true);
  });
  pick.addEventListener("change", () => void loadTag());

  async function refresh(): Promise<void> {
    const runs = ctx.state.selectedRuns();
    const tags = runs.length ? (await getJson<{ tags: TagEntry[] }>("/api/views/tensors/tags", { run: runs })).tags : [];
    const keep = pick.value;
    pick.replaceChildren();
    for (const t of tags) for (const run of t.runs) pick.append(h("option", { value: JSON.stringify([run, t.tag]) }, `${run} · ${t.tag}`));
    if (!tags.length) {
      meta.textContent = "No tensors in the selected runs.";
      return;
    }
    if (keep && [...pick.options].some((o) => o.value === keep)) pick.value = keep;
    await loadTag();
  }
  void refresh();
  return { refresh: () => void refresh(), dispose: () => undefined };
}
