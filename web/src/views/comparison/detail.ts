// The drill-down of one row: both tensors' statistics, the op's inputs against its output
// (error gain), the advisor's evidence, the error histogram, a heatmap of a 2-D slice, the
// worst elements, and a replay of the op on the bench inputs.
import { getJson, toNumber } from "../../api/client";
import { h } from "../../core/state";
import type { JsonNumber } from "../../api/types";
import { fmt, fmtMetric, fmtRatio, heatColor, VERDICT_COLORS } from "./scale";
import type { OpDetail, ReplayInfo, Row, TensorSummary } from "./types";

function statsTable(b: TensorSummary | null, t: TensorSummary | null): HTMLElement {
  const keys: [keyof TensorSummary, string][] = [
    ["shape", "shape"], ["dtype", "dtype"], ["min", "min"], ["max", "max"], ["mean", "mean"],
    ["std", "std"], ["norm", "L2 norm"], ["zeros", "zeros"], ["nan", "NaN"], ["pos_inf", "+Inf"], ["neg_inf", "-Inf"],
  ];
  const show = (s: TensorSummary | null, k: keyof TensorSummary): string => {
    if (!s) return "–";
    const v = s[k];
    if (Array.isArray(v)) return `[${v.join(", ")}]`;
    return typeof v === "string" ? v : fmt(v);
  };
  const body = h("tbody", {});
  for (const [k, label] of keys) body.append(h("tr", {}, h("th", {}, label), h("td", {}, show(b, k)), h("td", {}, show(t, k))));
  return h("table", { class: "cmp-small" }, h("thead", {}, h("tr", {}, h("th", {}), h("th", {}, "bench"), h("th", {}, "target"))), body);
}

/** An error gain as text: "3.2×", "∞" (the inputs agree exactly), "–" (not defined). */
export function fmtGain(v: JsonNumber | null | undefined): string {
  if (v === null || v === undefined) return "–";
  const n = toNumber(v);
  if (Number.isNaN(n)) return "–";
  return Number.isFinite(n) ? `${fmt(n)}×` : "∞";
}

/** What the error gain says about this row: outputs have one, inputs inherit their error. */
export function gainSentence(row: Row, opRows: Row[]): string {
  const e = fmt(row.error);
  if (row.match === "unmatched") return "No error gain: this tensor has no counterpart on the other side.";
  if (row.error_gain !== null && row.error_gain !== undefined) {
    const gain = toNumber(row.error_gain);
    if (toNumber(row.error) === 0) return "The output agrees exactly (error 0): this op adds no error.";
    const e0 = toNumber(row.input_error);
    if (e0 === 0 && gain !== 1) return `Output error ${e} while the inputs agree exactly: all of it is added by this op (error gain ∞).`;
    const how = gain > 1 ? "this op adds error" : "this op passes on (or damps) the error it received";
    return `Output error ${e} against its inputs' largest error ${fmt(row.input_error)}: error gain ${fmtGain(row.error_gain)} (${how}).`;
  }
  const outs = opRows.filter((r) => r.error_gain !== null && r.error_gain !== undefined);
  const arrives = toNumber(row.error) === 0 ? "it agrees exactly (error 0)" : `its error ${e} arrives from upstream (a parameter, a model input or an earlier op)`;
  const budget = row.budget === null || row.budget === undefined ? "" : ` Rounding and every earlier op explain at most ${fmt(row.budget)}.`;
  const what = row.tensor.startsWith("grad.") ? "an accumulated gradient, judged like an input" : "an input of this op";
  const gains = outs.length ? ` This op's ${outs.map((r) => `${r.tensor}: gain ${fmtGain(r.error_gain)}`).join(", ")}.` : "";
  return `This is ${what}: ${arrives}.${budget} Error gain (output error ÷ inputs' error) is defined for outputs only.${gains}`;
}

function opRows(d: OpDetail): HTMLElement {
  const body = h("tbody", {});
  for (const r of d.op_rows) {
    const tr = h("tr", r.position === d.position ? { class: "selected" } : {});
    const v = h("td", {}, r.verdict);
    v.style.color = VERDICT_COLORS[r.verdict] ?? "";
    const gain = h("td", {}, fmtGain(r.error_gain));
    if (r.error_gain === null) gain.title = r.tensor.startsWith("output") ? "no error measure" : "inputs have no gain: they inherit their error";
    tr.append(h("td", {}, r.tensor), h("td", {}, fmt(r.error)), h("td", {}, fmtRatio(r.budget_ratio as JsonNumber | null)), gain, h("td", {}, fmtMetric("cosine", r.cosine as number | null)), v);
    body.append(tr);
  }
  return h(
    "div",
    { id: "cmp-gain" },
    h("p", {}, gainSentence(d.row, d.op_rows)),
    h("table", { class: "cmp-small" }, h("thead", {}, h("tr", {}, h("th", {}, "tensor"), h("th", {}, "error"), h("th", { title: "error ÷ budget: above 1 the row shows more error than its dtypes and inputs explain" }, "err/budget"), h("th", {}, "gain"), h("th", {}, "cosine"), h("th", {}, "verdict"))), body),
  );
}

/** Decade ticks of the histogram's log10 axis: at most one label per ~48 px. */
export function histTicks(lo: number, hi: number, width: number): { exp: number; x: number }[] {
  if (!(hi > lo)) return [];
  const decades = Math.floor(hi) - Math.ceil(lo) + 1;
  const step = Math.max(1, Math.ceil(decades / Math.max(1, Math.floor(width / 48))));
  const out: { exp: number; x: number }[] = [];
  for (let e = Math.ceil(lo); e <= hi; e += step) out.push({ exp: e, x: ((e - lo) / (hi - lo)) * width });
  return out;
}

function histogram(d: OpDetail): HTMLElement {
  const hist = d.histogram;
  const canvas = h("canvas", { class: "cmp-hist", id: "cmp-hist", width: "520", height: "150" });
  const wrap = h("div", {}, canvas);
  if (!hist || !hist.counts.length) {
    wrap.replaceChildren(h("p", { class: "muted" }, hist ? `every element agrees exactly (${hist.zero} zero errors, ${hist.nonfinite} non-finite)` : "no histogram"));
    return wrap;
  }
  const ctx = canvas.getContext("2d");
  if (ctx) {
    const W = 520, H = 150, padL = 36, padB = 22;
    const max = Math.max(...hist.counts, 1);
    const n = hist.counts.length;
    const bw = (W - padL - 6) / n;
    ctx.fillStyle = "#4a6fa5";
    hist.counts.forEach((c, i) => {
      const bh = ((H - padB - 8) * c) / max;
      ctx.fillRect(padL + i * bw, H - padB - bh, Math.max(1, bw - 1), bh);
    });
    ctx.fillStyle = "#444";
    ctx.font = "10px sans-serif";
    const lo = hist.edges[0] ?? 0, hi = hist.edges[n] ?? 1;
    for (const t of histTicks(lo, hi, W - padL - 6)) {
      const label = `1e${t.exp}`;
      const w = ctx.measureText(label).width;
      // centred under its edge, kept inside the canvas (the last label used to be cut off)
      const x = Math.min(W - w - 1, Math.max(padL - w / 2, padL + t.x - w / 2));
      ctx.fillText(label, x, H - 6);
    }
    ctx.fillText(String(max), 2, 14);
    ctx.fillText("0", 2, H - padB);
  }
  canvas.dataset.bins = String(hist.counts.length);
  wrap.append(h("div", { class: "muted" }, `|target − bench| per element (log10 bins); ${hist.zero} exact, ${hist.nonfinite} non-finite`));
  return wrap;
}

function heatmap(d: OpDetail): HTMLElement {
  const m = d.heatmap;
  if (!m) return h("p", { class: "muted" }, "no 2-D slice to show");
  const rows = m.values.length;
  const cols = m.values[0]?.length ?? 0;
  const cell = Math.max(2, Math.floor(360 / Math.max(rows, cols, 1)));
  const canvas = h("canvas", { class: "cmp-heat", id: "cmp-heat", width: String(cols * cell), height: String(rows * cell) });
  const flat = m.values.flat().map(toNumber);
  if (flat.every((v) => v === 0)) return h("p", { class: "muted", id: "cmp-heat-none" }, "every element agrees exactly: no error to map");
  const logs = flat.filter((v) => Number.isFinite(v) && v > 0).map(Math.log10);
  const lo = logs.length ? Math.min(...logs) : 0;
  const hi = logs.length ? Math.max(...logs) : 0;
  const ctx = canvas.getContext("2d");
  if (ctx) {
    m.values.forEach((line, i) =>
      line.forEach((raw, j) => {
        const v = toNumber(raw);
        ctx.fillStyle = !Number.isFinite(v) ? "#000" : v === 0 ? "#fff" : heatColor(Math.log10(v), lo, hi);
        ctx.fillRect(j * cell, i * cell, cell, cell);
      }),
    );
  }
  const where = m.slice_index.length ? `slice [${m.slice_index.join(", ")}, :, :] of leading dims [${m.lead_shape.join(", ")}]` : "the whole tensor";
  const block = m.block[0] * m.block[1] > 1 ? `; each cell is the max of ${m.block[0]}×${m.block[1]} elements` : "";
  return h(
    "div",
    {},
    canvas,
    h("div", { class: "muted" }, `${where}, ${m.rows}×${m.cols}${block}; colour: log10 |error| from 1e${lo.toFixed(1)} (pale) to 1e${hi.toFixed(1)} (dark red), white = exact, black = non-finite`),
  );
}

function worst(d: OpDetail): HTMLElement {
  const body = h("tbody", {});
  for (const w of d.worst) {
    body.append(h("tr", {}, h("td", { class: "mono" }, `[${w.index.join(", ")}]`), h("td", {}, fmt(w.bench)), h("td", {}, fmt(w.target)), h("td", {}, fmt(w.abs_err)), h("td", {}, fmt(w.rel_err))));
  }
  return h("table", { class: "cmp-small", id: "cmp-worst" }, h("thead", {}, h("tr", {}, h("th", {}, "index"), h("th", {}, "bench"), h("th", {}, "target"), h("th", {}, "|error|"), h("th", {}, "rel. error"))), body);
}

function replaySection(name: string, row: Row): HTMLElement {
  const out = h("div", { id: "cmp-replay-out" });
  const button = h("button", { type: "button", id: "cmp-replay" }, "replay op");
  button.title = "re-run the op on the bench inputs in the target dtype and in float64";
  button.disabled = !row.tensor.startsWith("output") || row.match === "unmatched";
  button.addEventListener("click", () => {
    button.disabled = true;
    out.textContent = "replaying…";
    getJson<ReplayInfo>("/api/views/comparison/replay", { name, row: row.position })
      .then((r) => {
        out.replaceChildren(
          h("table", { class: "cmp-small" }, h("tbody", {},
            h("tr", {}, h("th", {}, `replay in ${r.dtype} vs float64`), h("td", {}, fmt(r.replay_vs_float64))),
            h("tr", {}, h("th", {}, "target vs float64"), h("td", {}, fmt(r.target_vs_float64))),
            h("tr", {}, h("th", {}, "bench vs float64"), h("td", {}, fmt(r.bench_vs_float64))),
            h("tr", {}, h("th", {}, `target vs replay in ${r.dtype}`), h("td", {}, fmt(r.target_vs_replay))),
          )),
          h("p", { class: r.op_explains_error ? "" : "warn" }, r.op_explains_error
            ? "The op's own rounding in the target dtype reproduces the target's error."
            : "Fed the bench inputs, the op does not reproduce the target output: the target computed something else (another kernel, parameter or a bug)."),
        );
      })
      .catch((err: unknown) => {
        out.replaceChildren(h("p", { class: "error-text" }, String(err instanceof Error ? err.message : err)));
        button.disabled = false;
      });
  });
  return h("div", {}, button, out);
}

export interface DetailActions {
  close: () => void;
  locate: () => void; // show the op in the side-by-side traces
  table: () => void; // show the row in the table
}

export async function renderDetail(el: HTMLElement, name: string, row: Row, actions: DetailActions): Promise<void> {
  const close = h("button", { type: "button", id: "cmp-detail-close", title: "close" }, "✕");
  close.addEventListener("click", actions.close);
  const locate = h("button", { type: "button", id: "cmp-detail-locate", title: "show this op in the side-by-side op traces" }, "↔ side by side");
  locate.addEventListener("click", actions.locate);
  const inTable = h("button", { type: "button", id: "cmp-detail-table", title: "show this row in the table (filters cleared)" }, "table");
  inTable.addEventListener("click", actions.table);
  const verdict = h("span", { class: "verdict" }, row.verdict);
  verdict.style.color = VERDICT_COLORS[row.verdict] ?? "";
  el.replaceChildren(
    h("div", { class: "cmp-detail-head" }, h("h3", { "data-position": String(row.position), title: `op index ${String(row.index ?? "–")} (row ${row.position})` }, `#${String(row.index ?? "–")} ${row.op} · ${row.tensor}`), inTable, locate, close),
    h("div", { class: "muted" }, `${row.direction} in ${row.module_path || "<root>"}`, " · ", verdict),
    h("p", {}, row.reason),
    h("p", { class: "muted" }, "loading tensors…"),
  );
  const d = await getJson<OpDetail>("/api/views/comparison/detail", { name, row: row.position, top: 10 });
  const body: (HTMLElement | string)[] = [];
  if (d.advice.length) body.push(h("div", { class: "cmp-advice" }, ...d.advice.map((a) => h("p", {}, h("b", {}, a.mechanism + ": "), a.evidence))));
  if (d.note) body.push(h("p", { class: "warn", id: "cmp-note" }, d.note));
  body.push(
    h("h4", {}, "statistics"), statsTable(d.bench, d.target),
    h("h4", {}, "error gain"), opRows(d),
    h("h4", {}, "error histogram"), histogram(d),
    h("h4", {}, "element-wise error"), heatmap(d),
    h("h4", {}, `worst ${d.worst.length} elements`), worst(d),
    h("h4", {}, "replay"), replaySection(name, row),
  );
  el.lastElementChild?.remove();
  el.append(...body);
}
