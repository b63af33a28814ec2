// Landscapes view: contour map with the training path, a WebGL 3-D surface, two side by side.
import "./landscapes.css";
import { getJson } from "../../api/client";
import type { TagEntry } from "../../api/types";
import { h, type ViewContext, type ViewInstance } from "../../core/state";
import { drawContour, extent, fmt, fmtRange, grid, PAD, type Landscape } from "./draw";
import { createSurface, type Surface } from "./surface";

type Mode = "contour" | "3d" | "side";

function describe(ls: Landscape): string {
  const m = ls.metadata;
  const parts = [`step ${ls.step}`, `${ls.shape[1]} × ${ls.shape[0]} grid${ls.downsampled ? " (thinned)" : ""}`];
  if (ls.min !== null && ls.max !== null) parts.push(`loss ${fmtRange(ls.min, ls.max).join(" … ")}`);
  if (ls.nan_count) parts.push(`${ls.nan_count} non-finite`);
  if (typeof m.directions === "string") parts.push(`${m.directions} directions`);
  if (typeof m.decomposition === "string") parts.push(`decomposition ${m.decomposition}`);
  const ev = m.explained_variance;
  if (Array.isArray(ev) && ev.length === 2) parts.push(`PCA explains ${(100 * Number(ev[0])).toFixed(1)}% + ${(100 * Number(ev[1])).toFixed(1)}%`);
  if (ls.path?.length) parts.push(`training path of ${ls.path.length} points (● first, ▲ last)`);
  return parts.join(" · ");
}

export function render(el: HTMLElement, ctx: ViewContext): ViewInstance {
  const pickA = h("select", { id: "ls-pick-a" });
  const pickB = h("select", { id: "ls-pick-b" });
  const stepA = h("select", { id: "ls-step-a" });
  const log = h("input", { type: "checkbox", id: "ls-log" });
  const shared = h("input", { type: "checkbox", id: "ls-shared", checked: "" });
  shared.checked = true;
  const modeBtn = (id: Mode, label: string): HTMLButtonElement => h("button", { id: `ls-mode-${id}`, type: "button" }, label);
  const modes: Record<Mode, HTMLButtonElement> = { contour: modeBtn("contour", "contour"), "3d": modeBtn("3d", "3-D"), side: modeBtn("side", "side by side") };
  const labelB = h("span", { id: "ls-b-label" }, h("label", {}, "compare with ", pickB), h("label", {}, shared, " shared colour scale"));
  const meta = h("div", { class: "muted", id: "ls-meta" });
  const error = h("div", { class: "error-text", id: "ls-error" });
  const contourA = h("canvas", { id: "ls-contour-a", width: "620", height: "500" });
  const contourB = h("canvas", { id: "ls-contour-b", width: "620", height: "500" });
  const glCanvas = h("canvas", { id: "ls-surface", width: "620", height: "500" });
  const hoverA = h("div", { class: "muted", id: "ls-hover-a" });
  const titleA = h("h4", { id: "ls-title-a" });
  const titleB = h("h4", { id: "ls-title-b" });
  const metaB = h("div", { class: "muted", id: "ls-meta-b" });
  const glNote = h("div", { class: "ls-nogl", id: "ls-nogl" });
  const panelA = h("div", { class: "ls-panel", id: "ls-panel-a" }, titleA, contourA, hoverA);
  const panelB = h("div", { class: "ls-panel", id: "ls-panel-b" }, titleB, contourB, metaB);
  const panel3d = h("div", { class: "ls-panel ls-surface", id: "ls-panel-3d" }, h("h4", {}, "3-D surface (drag to rotate, wheel to zoom)"), glCanvas, glNote);
  el.append(
    h("div", { class: "toolbar" }, h("label", {}, "landscape ", pickA), h("label", {}, "step ", stepA), h("span", { class: "ls-modes" }, modes.contour, modes["3d"], modes.side), labelB, h("label", {}, log, " log scale")),
    meta,
    error,
    h("div", { class: "ls-panels" }, panelA, panel3d, panelB),
  );
  let mode: Mode = "contour";
  let a: Landscape | null = null;
  let b: Landscape | null = null;
  let surface: Surface | null | undefined;

  const key = (sel: HTMLSelectElement): [string, string] => JSON.parse(sel.value || '["",""]') as [string, string];

  function draw(): void {
    for (const [m, btn] of Object.entries(modes)) btn.classList.toggle("active", m === mode);
    panel3d.style.display = mode === "3d" ? "" : "none";
    panelB.style.display = mode === "side" ? "" : "none";
    labelB.style.display = mode === "side" ? "" : "none";
    if (!a) return;
    const useLog = log.checked;
    let range: [number, number] | null = null;
    const side = mode === "side";
    const width = side ? Math.max(320, Math.min(620, Math.floor((el.clientWidth - 12) / 2) - 24)) : 620;
    for (const cv of [contourA, contourB]) {
      if (cv.width !== width) {
        cv.width = width;
        cv.height = Math.round(width * 0.8);
      }
    }
    for (const t of [metaB, hoverA]) t.style.maxWidth = `${width}px`;
    if (side && b && shared.checked) {
      const ea = extent(grid(a, useLog));
      const eb = extent(grid(b, useLog));
      if (ea && eb) range = [Math.min(ea[0], eb[0]), Math.max(ea[1], eb[1])];
      else range = ea ?? eb;
    }
    titleA.textContent = `${a.run} · ${a.tag}`;
    meta.textContent = describe(a) + (range ? ` · shared colour scale ${fmtRange(range[0], range[1]).join(" … ")}` : "");
    const dA = drawContour(contourA, a, { log: useLog, levels: 12, range });
    contourA.dataset.isolines = String(dA.isolines);
    contourA.dataset.path = String(dA.pathPoints);
    contourA.dataset.step = String(a.step);
    if (mode === "side" && b) {
      titleB.textContent = `${b.run} · ${b.tag}`;
      metaB.textContent = describe(b);
      const dB = drawContour(contourB, b, { log: useLog, levels: 12, range });
      contourB.dataset.isolines = String(dB.isolines);
      contourB.dataset.path = String(dB.pathPoints);
      contourB.dataset.tag = b.tag;
    }
    if (mode === "3d") {
      if (surface === undefined) surface = createSurface(glCanvas);
      if (surface === null) {
        glNote.textContent = "WebGL is not available in this browser (hardware acceleration off or unsupported), so the 3-D surface cannot be drawn. The contour map shows the same landscape.";
        glCanvas.style.display = "none";
        glCanvas.dataset.gl = "none";
        panelA.style.display = "";
      } else {
        glCanvas.dataset.triangles = String(surface.draw(a, useLog));
        glCanvas.dataset.gl = "webgl";
      }
    }
    panelA.style.display = mode === "3d" && surface ? "none" : "";
  }

  async function loadA(step?: number): Promise<void> {
    const [run, tag] = key(pickA);
    error.textContent = "";
    try {
      a = await getJson<Landscape>("/api/views/landscapes/landscape", { run, tag, step });
    } catch (err) {
      error.textContent = (err as Error).message;
      return;
    }
    const keep = String(a.step);
    stepA.replaceChildren(...a.steps.map((s) => h("option", { value: String(s) }, String(s))));
    stepA.value = keep;
    draw();
  }

  async function loadB(): Promise<void> {
    if (!pickB.value) return;
    const [run, tag] = key(pickB);
    try {
      b = await getJson<Landscape>("/api/views/landscapes/landscape", { run, tag });
    } catch (err) {
      error.textContent = (err as Error).message;
      return;
    }
    draw();
  }

  contourA.addEventListener("mousemove", (ev) => {
    if (!a) return;
    const r = contourA.getBoundingClientRect();
    const plot = { left: PAD.left, top: PAD.top, width: contourA.width - PAD.left - PAD.right, height: contourA.height - PAD.top - PAD.bottom };
    const fx = (ev.clientX - r.left - plot.left) / plot.width;
    const fy = 1 - (ev.clientY - r.top - plot.top) / plot.height;
    if (fx < 0 || fx > 1 || fy < 0 || fy > 1) {
      hoverA.textContent = "";
      return;
    }
    const j = Math.round(fx * (a.x.length - 1));
    const i = Math.round(fy * (a.y.length - 1));
    const v = a.values[i]?.[j];
    hoverA.textContent = `x ${fmt(a.x[j] ?? Number.NaN)}, y ${fmt(a.y[i] ?? Number.NaN)}: loss ${v === null || v === undefined ? "NaN" : fmt(v)}`;
  });
  for (const m of Object.keys(modes) as Mode[])
    modes[m].addEventListener("click", () => {
      mode = m;
      if (m === "side" && !b) void loadB();
      draw();
    });
  pickA.addEventListener("change", () => void loadA());
  stepA.addEventListener("change", () => void loadA(Number(stepA.value)));
  pickB.addEventListener("change", () => void loadB());
  log.addEventListener("change", draw);
  shared.addEventListener("change", draw);

  async function refresh(): Promise<void> {
    const runs = ctx.state.selectedRuns();
    const tags = runs.length ? (await getJson<{ tags: TagEntry[] }>("/api/views/landscapes/tags", { run: runs })).tags : [];
    const keepA = pickA.value;
    const keepB = pickB.value;
    const options = (): HTMLOptionElement[] => tags.flatMap((t) => t.runs.map((run) => h("option", { value: JSON.stringify([run, t.tag]) }, `${run} · ${t.tag}`)));
    pickA.replaceChildren(...options());
    pickB.replaceChildren(...options());
    if (!tags.length) {
      meta.textContent = "No loss landscapes in the selected runs. Log one with tensorsight.landscape.compute(...).write(writer, tag).";
      return;
    }
    const values = [...pickA.options].map((o) => o.value);
    if (keepA && values.includes(keepA)) pickA.value = keepA;
    pickB.value = keepB && values.includes(keepB) ? keepB : (values.find((v) => v !== pickA.value) ?? values[0]!);
    await loadA();
    if (mode === "side") await loadB();
  }
  void refresh();
  return { refresh: () => void refresh(), dispose: () => surface?.dispose() };
}
