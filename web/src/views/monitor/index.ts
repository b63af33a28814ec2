// Monitor view: what tensorsight.watch found, as a per-module heat map over steps (colour = the
// worst finding of a cell) and as markers on the loss curve; a click shows one step's findings.
// A run named <group>/rank<r> also gets its group's ranks side by side (a row per rank).
import "./monitor.css";
import { getJson, toNumber } from "../../api/client";
import { formatNumber, niceTicks } from "../../core/format";
import { h, type ViewContext, type ViewInstance } from "../../core/state";
import {
  CLEAN,
  columnSteps,
  describeFinding,
  firstAcrossRanks,
  isRankRun,
  kindColor,
  KIND_COLORS,
  moduleLabel,
  nearestMarker,
  visibleRows,
  type Cell,
  type Heatmap,
  type Marker,
  type RankCell,
  type Ranks,
  type StepFindings,
} from "./model";

const RIGHT = 16;
const LOSS_H = 190;
const LOSS_PAD = { top: 18, bottom: 22 };
const MAX_LABEL = 220;

export function render(el: HTMLElement, ctx: ViewContext): ViewInstance {
  const pick = h("select", { id: "mon-run" });
  const flagged = h("input", { type: "checkbox", id: "mon-flagged" });
  const legend = h("span", { class: "mon-legend", id: "mon-legend" });
  const meta = h("div", { class: "muted", id: "mon-meta" });
  const error = h("div", { class: "error-text", id: "mon-error" });
  const loss = h("canvas", { id: "mon-loss", height: String(LOSS_H) });
  const lossTitle = h("h4", { id: "mon-loss-title" }, "Loss (loss/auto); ▼ steps with findings");
  const heat = h("canvas", { id: "mon-heat" });
  const hover = h("div", { class: "mon-hover muted", id: "mon-hover" }, "Hover a cell for its finding; click a cell or a ▼ marker for the step's findings.");
  const detail = h("div", { class: "mon-detail", id: "mon-detail" });
  const ranksCanvas = h("canvas", { id: "mon-ranks" });
  const ranksNote = h("div", { class: "muted mon-hover", id: "mon-ranks-first" });
  const ranksHover = h("div", { class: "mon-hover muted", id: "mon-ranks-hover" });
  const ranksPanel = h(
    "div",
    { class: "mon-panel", id: "mon-ranks-panel", hidden: "" },
    h("h4", {}, "Ranks side by side: worst finding per rank (rows) and step (columns); click a cell to open that rank at that step"),
    ranksNote,
    h("div", { class: "mon-heat-wrap" }, ranksCanvas),
    ranksHover,
  );
  const heatWrap = h("div", { class: "mon-heat-wrap" }, heat);
  el.append(
    h("div", { class: "toolbar" }, h("label", {}, "run ", pick), legend, h("label", {}, flagged, " only modules with findings")),
    meta,
    error,
    h("div", { class: "mon-panel" }, lossTitle, loss),
    ranksPanel,
    h("div", { class: "mon-panel" }, h("h4", {}, "Findings per module (rows) and step (columns)"), heatWrap, hover),
    detail,
  );
  const hidden = new Set<string>();
  let data: Heatmap | null = null;
  let ranks: Ranks | null = null;
  const RANK_H = 18;
  let rows: number[] = [];
  let left = 120;
  let rowH = 16;

  const plotW = (): number => Math.max(50, loss.width - left - RIGHT);
  const colW = (): number => plotW() / Math.max(1, data?.columns ?? 1);
  const xOf = (step: number): number => {
    if (!data) return left;
    const span = data.columns * data.bin;
    return left + ((step - data.first_step + 0.5) / span) * plotW();
  };

  function buildLegend(kinds: string[]): void {
    legend.replaceChildren(
      ...kinds.map((k) => {
        const b = h("button", { type: "button", id: `mon-kind-${k}`, class: "mon-kind", title: `show or hide ${k} findings` }, h("span", { class: "mon-swatch" }), k);
        (b.firstChild as HTMLElement).style.background = KIND_COLORS[k] ?? "#999";
        b.setAttribute("aria-pressed", String(!hidden.has(k)));
        b.classList.toggle("off", hidden.has(k));
        b.addEventListener("click", () => {
          if (hidden.has(k)) hidden.delete(k);
          else hidden.add(k);
          buildLegend(kinds);
          draw();
        });
        return b;
      }),
    );
  }

  function shownMarkers(): Marker[] {
    return data ? data.markers.filter((m) => m.worst === null || !hidden.has(m.worst)) : [];
  }

  function drawLoss(): void {
    const g = loss.getContext("2d");
    if (!g || !data) return;
    g.clearRect(0, 0, loss.width, loss.height);
    lossTitle.textContent = `Loss (${data.loss?.tag ?? "loss/auto"}); ▼ steps with findings`;
    const top = LOSS_PAD.top;
    const bottom = loss.height - LOSS_PAD.bottom;
    const pts = (data.loss?.steps ?? []).map((s, i) => [s, toNumber(data!.loss!.values[i] ?? null)] as [number, number]);
    const finite = pts.filter(([, v]) => Number.isFinite(v)).map(([, v]) => v);
    let lo = finite.length ? Math.min(...finite) : 0;
    let hi = finite.length ? Math.max(...finite) : 1;
    if (hi === lo) {
      hi += Math.abs(hi) * 0.1 + 1e-9;
      lo -= Math.abs(lo) * 0.1 + 1e-9;
    }
    const yOf = (v: number): number => bottom - ((v - lo) / (hi - lo)) * (bottom - top);
    g.font = "10px sans-serif";
    g.fillStyle = "#666";
    g.strokeStyle = "#eee";
    g.textAlign = "right";
    for (const t of niceTicks(lo, hi, 4)) {
      const y = yOf(t);
      g.beginPath();
      g.moveTo(left, y);
      g.lineTo(left + plotW(), y);
      g.stroke();
      g.fillText(formatNumber(t), left - 4, y + 3);
    }
    g.textAlign = "center";
    for (const t of niceTicks(data.first_step, data.last_step, 8)) if (Number.isInteger(t)) g.fillText(String(t), xOf(t), loss.height - 6);
    g.strokeStyle = "#4e79a7";
    g.lineWidth = 1.5;
    g.beginPath();
    let pen = false;
    for (const [s, v] of pts) {
      if (!Number.isFinite(v)) {
        pen = false;
        continue;
      }
      if (pen) g.lineTo(xOf(s), yOf(v));
      else g.moveTo(xOf(s), yOf(v));
      pen = true;
    }
    g.stroke();
    g.lineWidth = 1;
    if (!pts.length) {
      g.fillStyle = "#999";
      g.fillText("no loss logged (call w.log_loss(loss) in the loop)", left + plotW() / 2, (top + bottom) / 2);
    }
    const markers = shownMarkers();
    for (const m of markers) {
      const x = xOf(m.step);
      const colour = kindColor(m.worst);
      g.strokeStyle = colour;
      g.setLineDash([3, 3]);
      g.beginPath();
      g.moveTo(x, top);
      g.lineTo(x, bottom);
      g.stroke();
      g.setLineDash([]);
      g.fillStyle = colour;
      g.beginPath();
      g.moveTo(x - 5, 3);
      g.lineTo(x + 5, 3);
      g.lineTo(x, 12);
      g.closePath();
      g.fill();
      const v = toNumber(m.loss);
      if (Number.isFinite(v)) {
        g.beginPath();
        g.arc(x, yOf(v), 3.5, 0, 2 * Math.PI);
        g.fill();
      }
      if (m.dump) {
        g.fillStyle = "#222";
        g.fillText(`dump: step ${m.dump.step}`, x, bottom - 3);
      }
    }
    loss.dataset.markers = String(markers.length);
    loss.dataset.markerXs = JSON.stringify(markers.map((m) => Math.round(xOf(m.step))));
  }

  function drawHeat(): void {
    const g = heat.getContext("2d");
    if (!g || !data) return;
    rows = visibleRows(data, flagged.checked, hidden);
    rowH = rows.length > 60 ? 10 : rows.length > 30 ? 13 : 18;
    heat.width = loss.width;
    heat.height = Math.max(rowH, rows.length * rowH) + 4;
    g.clearRect(0, 0, heat.width, heat.height);
    const cw = colW();
    g.font = `${Math.min(11, rowH - 3)}px sans-serif`;
    g.textAlign = "right";
    g.textBaseline = "middle";
    const at = new Map<number, number>(rows.map((r, i) => [r, i]));
    rows.forEach((r, i) => {
      const y = i * rowH;
      g.fillStyle = CLEAN;
      g.fillRect(left, y + 1, plotW(), rowH - 2);
      g.fillStyle = "#333";
      let label = moduleLabel(data!.modules[r] ?? "");
      while (label.length > 4 && g.measureText(label).width > left - 8) label = "…" + label.slice(2);
      g.fillText(label, left - 6, y + rowH / 2);
    });
    let drawn = 0;
    for (const c of data.cells) {
      const i = at.get(c.row);
      if (i === undefined || hidden.has(c.kind)) continue;
      g.fillStyle = kindColor(c.kind);
      g.fillRect(left + c.col * cw, i * rowH + 1, Math.max(1, cw - (cw > 4 ? 1 : 0)), rowH - 2);
      drawn++;
    }
    heat.dataset.rows = String(rows.length);
    heat.dataset.cols = String(data.columns);
    heat.dataset.cells = String(drawn);
    heat.dataset.geometry = JSON.stringify({ left, rowH, colW: cw, rows: rows.map((r) => data!.modules[r]) });
  }

  function drawRanks(): void {
    const g = ranksCanvas.getContext("2d");
    if (!g || !ranks || ranks.ranks.length < 2) {
      ranksPanel.hidden = true;
      return;
    }
    ranksPanel.hidden = false;
    ranksNote.textContent = firstAcrossRanks(ranks);
    ranksCanvas.width = loss.width;
    ranksCanvas.height = ranks.ranks.length * RANK_H + 4;
    g.clearRect(0, 0, ranksCanvas.width, ranksCanvas.height);
    const cw = plotW() / Math.max(1, ranks.columns);
    g.textAlign = "right";
    g.textBaseline = "middle";
    ranks.ranks.forEach((r, i) => {
      const y = i * RANK_H;
      g.fillStyle = CLEAN;
      g.fillRect(left, y + 1, plotW(), RANK_H - 2);
      const current = r.run === pick.value;
      g.font = `${current ? "bold " : ""}11px sans-serif`;
      g.fillStyle = current ? "#000" : "#333";
      g.fillText(`${current ? "▶ " : ""}rank ${r.rank}`, left - 6, y + RANK_H / 2);
    });
    let drawn = 0;
    for (const c of ranks.cells) {
      if (hidden.has(c.kind)) continue;
      g.fillStyle = kindColor(c.kind);
      g.fillRect(left + c.col * cw, c.row * RANK_H + 1, Math.max(1, cw - (cw > 4 ? 1 : 0)), RANK_H - 2);
      drawn++;
    }
    ranksCanvas.dataset.cells = String(drawn);
    ranksCanvas.dataset.geometry = JSON.stringify({ left, rowH: RANK_H, colW: cw, firstStep: ranks.first_step, bin: ranks.bin, ranks: ranks.ranks.map((r) => r.rank) });
  }

  function rankCellAt(ev: MouseEvent): { row: number; col: number; cell: RankCell | null } | null {
    if (!ranks) return null;
    const r = ranksCanvas.getBoundingClientRect();
    const x = ev.clientX - r.left;
    const row = Math.floor((ev.clientY - r.top) / RANK_H);
    if (x < left || x > left + plotW() || row < 0 || row >= ranks.ranks.length) return null;
    const col = Math.min(ranks.columns - 1, Math.floor(((x - left) / plotW()) * ranks.columns));
    const cell = ranks.cells.find((c) => c.row === row && c.col === col && !hidden.has(c.kind)) ?? null;
    return { row, col, cell };
  }

  ranksCanvas.addEventListener("mousemove", (ev) => {
    const hit = rankCellAt(ev);
    if (!hit || !ranks) {
      ranksHover.textContent = "";
      return;
    }
    const [lo, hi] = columnSteps(ranks, hit.col);
    const steps = lo === hi ? `step ${lo}` : `steps ${lo}–${hi}`;
    const who = `rank ${ranks.ranks[hit.row]!.rank}`;
    if (!hit.cell) {
      ranksHover.textContent = `${who} · ${steps}: no finding`;
      return;
    }
    const more = hit.cell.count > 1 ? ` (worst of ${hit.cell.count} findings)` : "";
    ranksHover.textContent = `${who} · ${steps}: step ${hit.cell.step}, ${describeFinding(hit.cell)} in ${moduleLabel(hit.cell.module)}${more}`;
  });
  ranksCanvas.addEventListener("mouseleave", () => {
    ranksHover.textContent = "";
  });
  ranksCanvas.addEventListener("click", (ev) => {
    const hit = rankCellAt(ev);
    if (!hit || !ranks) return;
    const run = ranks.ranks[hit.row]!.run;
    if (![...pick.options].some((o) => o.value === run)) pick.append(h("option", { value: run }, run));
    pick.value = run;
    void load(hit.cell ? hit.cell.step : undefined);
  });

  function draw(): void {
    if (!data) return;
    drawLoss();
    drawRanks();
    drawHeat();
  }

  function cellAt(ev: MouseEvent): { cell: Cell | null; row: number; col: number } | null {
    if (!data) return null;
    const r = heat.getBoundingClientRect();
    const x = ev.clientX - r.left;
    const i = Math.floor((ev.clientY - r.top) / rowH);
    if (x < left || x > left + plotW() || i < 0 || i >= rows.length) return null;
    const col = Math.min(data.columns - 1, Math.floor((x - left) / colW()));
    const row = rows[i]!;
    const cell = data.cells.find((c) => c.row === row && c.col === col && !hidden.has(c.kind)) ?? null;
    return { cell, row, col };
  }

  heat.addEventListener("mousemove", (ev) => {
    const hit = cellAt(ev);
    if (!hit || !data) {
      hover.textContent = "";
      return;
    }
    const [lo, hi] = columnSteps(data, hit.col);
    const steps = lo === hi ? `step ${lo}` : `steps ${lo}–${hi}`;
    const module = moduleLabel(data.modules[hit.row] ?? "");
    if (!hit.cell) {
      hover.textContent = `${module} · ${steps}: no finding`;
      return;
    }
    const more = hit.cell.count > 1 ? ` (worst of ${hit.cell.count} findings)` : "";
    hover.textContent = `${module} · ${steps}: step ${hit.cell.step}, ${describeFinding(hit.cell)}${more}`;
  });
  heat.addEventListener("mouseleave", () => {
    hover.textContent = "";
  });
  heat.addEventListener("click", (ev) => {
    const hit = cellAt(ev);
    if (hit?.cell) void showStep(hit.cell.step);
  });
  loss.addEventListener("click", (ev) => {
    const r = loss.getBoundingClientRect();
    const m = nearestMarker(shownMarkers(), ev.clientX - r.left, xOf);
    if (m) void showStep(m.step);
  });
  loss.addEventListener("mousemove", (ev) => {
    const r = loss.getBoundingClientRect();
    loss.style.cursor = nearestMarker(shownMarkers(), ev.clientX - r.left, xOf) ? "pointer" : "default";
  });

  async function showStep(step: number): Promise<void> {
    let s: StepFindings;
    try {
      s = await getJson<StepFindings>("/api/views/monitor/step", { run: pick.value, step });
    } catch (err) {
      error.textContent = (err as Error).message;
      return;
    }
    const lossText = s.loss === null ? "" : ` · loss ${formatNumber(toNumber(s.loss))}`;
    const head = h("h4", { id: "mon-detail-title" }, `Step ${s.step}: ${s.findings.length + s.truncated} finding${s.findings.length + s.truncated === 1 ? "" : "s"}${lossText}`);
    const close = h("button", { type: "button", id: "mon-detail-close", class: "mon-close" }, "close");
    close.addEventListener("click", () => detail.replaceChildren());
    const dump = s.dump
      ? h("div", { id: "mon-dump" }, `Step ${s.dump.step} was recorded to `, h("code", {}, s.dump.path), ` (open it with tensorsight compare).`)
      : h("div", { id: "mon-dump", class: "muted" }, "No dump recorded for this step (watch(dump_on_anomaly=DIR) records the step after the first anomaly).");
    const table = h(
      "table",
      { class: "mon-table", id: "mon-findings" },
      h("tr", {}, ...["#", "kind", "module", "source", "tensor", "dtype", "stat", "value", "median"].map((t) => h("th", {}, t))),
      ...s.findings.map((f, i) => {
        const kind = h("td", {}, h("span", { class: "mon-swatch" }), f.kind);
        (kind.firstChild as HTMLElement).style.background = kindColor(f.kind);
        return h(
          "tr",
          {},
          h("td", { class: "num" }, String(i + 1)),
          kind,
          h("td", {}, moduleLabel(f.module ?? "")),
          h("td", {}, f.source),
          h("td", {}, f.source === "grad" || f.source === "state" ? `${f.where} ${f.tensor}` : f.tensor),
          h("td", {}, f.dtype),
          h("td", {}, f.stat),
          h("td", { class: "num" }, formatNumber(toNumber(f.value))),
          h("td", { class: "num" }, f.reference === null || f.reference === undefined ? "" : formatNumber(toNumber(f.reference))),
        );
      }),
    );
    const note = s.truncated ? h("div", { class: "muted" }, `and ${s.truncated} more not recorded (watch keeps 256 per step)`) : "";
    detail.replaceChildren(h("div", { class: "mon-detail-head" }, head, close), dump, table, note);
    detail.dataset.step = String(s.step);
  }

  async function load(openStep?: number): Promise<void> {
    error.textContent = "";
    const width = Math.max(400, el.clientWidth - 24);
    loss.width = width;
    const columns = Math.max(1, Math.floor(width - 240));
    try {
      const [heatmap, group] = await Promise.all([
        getJson<Heatmap>("/api/views/monitor/heatmap", { run: pick.value, max_columns: columns }),
        isRankRun(pick.value) ? getJson<Ranks>("/api/views/monitor/ranks", { run: pick.value, max_columns: columns }) : Promise.resolve(null),
      ]);
      data = heatmap;
      ranks = group;
    } catch (err) {
      error.textContent = (err as Error).message;
      return;
    }
    const g = loss.getContext("2d");
    if (g) {
      g.font = "11px sans-serif";
      const labels = [...data.modules.map(moduleLabel), ...(ranks?.ranks ?? []).map((r) => `▶ rank ${r.rank}`)];
      const widest = Math.max(40, ...labels.map((m) => g.measureText(m).width));
      left = Math.min(MAX_LABEL, Math.ceil(widest) + 14);
    }
    buildLegend(data.kinds);
    const n = data.markers.length;
    const cols = data.bin > 1 ? `, ${data.bin} steps per column` : "";
    meta.textContent = `${data.run}: ${data.checked_steps} steps checked (${data.first_step}–${data.last_step}${cols}), ${data.modules.length} rows, ${n} step${n === 1 ? "" : "s"} with findings` + (n ? `, first at step ${data.markers[0]!.step}` : "");
    draw();
    detail.replaceChildren();
    if (openStep !== undefined) void showStep(openStep);
    else if (n) void showStep(data.markers[0]!.step);
  }

  pick.addEventListener("change", () => void load());
  flagged.addEventListener("change", draw);

  async function refresh(): Promise<void> {
    const selected = ctx.state.selectedRuns();
    const runs = selected.length ? (await getJson<{ runs: string[] }>("/api/views/monitor/runs", { run: selected })).runs : [];
    const keep = pick.value;
    pick.replaceChildren(...runs.map((r) => h("option", { value: r }, r)));
    if (!runs.length) {
      meta.textContent = "No monitor findings in the selected runs. tensorsight.watch(model, optimizer, logdir) and the framework adapters write them.";
      data = null;
      return;
    }
    if (keep && runs.includes(keep)) pick.value = keep;
    await load();
  }
  void refresh();
  return { refresh: () => void refresh(), dispose: () => undefined };
}
