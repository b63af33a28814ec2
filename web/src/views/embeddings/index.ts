// Embeddings view: TensorBoard's projector. The server computes a PCA (2 or 3 components) of at
// most 10,000 sampled points; this draws it on a canvas (3-D: drag to rotate), colours points by
// a metadata column (legend), shows a point's labels on hover, lists the nearest neighbours of
// a clicked point (over the whole matrix, on the server) and highlights them, and highlights the
// points whose label matches the search box. The canvas's data-* attributes are for tests.
import { getJson } from "../../api/client";
import type { TagEntry } from "../../api/types";
import { formatNumber } from "../../core/format";
import { h, type ViewContext, type ViewInstance } from "../../core/state";
import {
  applyView,
  categorize,
  defaultColorColumn,
  depthOrder,
  fitScreen,
  hitTest,
  matchLabels,
  PLAIN_COLOR,
  pointLabels,
  radiusOf,
  rotate,
  spriteCell,
  toScreen,
  numericScale,
  scaleColor,
  varianceText,
  zoomAt,
  FITTED,
  type Categories,
  type NumericScale,
  type ViewBox,
  type EmbeddingsResponse,
  type NeighborsResponse,
  type ProjectionResponse,
  type ScreenMap,
} from "./model";
import { TSNE_INPUT_DIMS, TSNE_MAX_POINTS } from "./tsne";
import type { TsneProgress, TsneRequest } from "./tsne.worker";
import "./embeddings.css";

const TSNE_ITERATIONS = 500;
const TSNE_PERPLEXITY = 30;
const UMAP_EPOCHS = 300;
const UMAP_NEIGHBORS = 15;

const API = "/api/views/embeddings";
const PAD = 28;
const THUMB_PX = 18; // a thumbnail's larger side on the canvas
const MAX_THUMBS = 3000; // more points than this are drawn as dots

function option(value: string, text: string): HTMLOptionElement {
  const o = h("option", { value }, text);
  return o;
}

function fill(select: HTMLSelectElement, items: [string, string][], keep: string): void {
  select.replaceChildren(...items.map(([v, t]) => option(v, t)));
  if (items.some(([v]) => v === keep)) select.value = keep;
}

export function render(el: HTMLElement, ctx: ViewContext): ViewInstance {
  const runSel = h("select", { id: "emb-run", title: "run" });
  const tagSel = h("select", { id: "emb-tag", title: "tag" });
  const stepSel = h("select", { id: "emb-step", title: "step" });
  const dimsSel = h("select", { id: "emb-dims" }, option("2", "2-D"), option("3", "3-D"));
  const methodSel = h(
    "select",
    { id: "emb-method", title: `PCA: every drawn point, at once. t-SNE and UMAP: at most ${TSNE_MAX_POINTS.toLocaleString()} points (sampled past that), computed in the page` },
    option("pca", "PCA"),
    option("tsne", "t-SNE"),
    option("umap", "UMAP"),
  );
  const progress = h("progress", { id: "emb-progress", max: "1", value: "0", hidden: "" });
  const resetView = h("button", { type: "button", id: "emb-reset", title: "undo the zoom and pan (wheel: zoom, drag: pan in 2-D)" }, "reset view");
  const colorSel = h("select", { id: "emb-color" });
  const labelSel = h("select", { id: "emb-label" });
  const search = h("input", { type: "search", id: "emb-search", placeholder: "search labels (regex)" });
  const metricSel = h("select", { id: "emb-metric" }, option("cosine", "cosine"), option("euclidean", "euclidean"));
  const thumbs = h("input", { type: "checkbox", id: "emb-thumbs" });
  const thumbsLabel = h("label", { title: "draw each point as its sprite thumbnail (up to 3,000 points)" }, thumbs, " thumbnails");
  const kSel = h("select", { id: "emb-k" }, ...["5", "10", "20", "50"].map((k) => option(k, k)));
  kSel.value = "10";
  const message = h("p", { class: "muted", id: "emb-message" });
  const canvas = h("canvas", { class: "emb-canvas", id: "emb-canvas" });
  const tooltip = h("div", { class: "emb-tooltip", hidden: "" });
  const info = h("div", { class: "chart-info", id: "emb-info" });
  const problems = h("div", { class: "warn-text emb-problems" });
  const legend = h("div", { class: "emb-legend", id: "emb-legend" });
  const colorbar = h("div", { class: "emb-colorbar", id: "emb-colorbar", hidden: "" });
  const panel = h("aside", { class: "card emb-panel", id: "emb-panel" }, h("p", { class: "muted" }, "Click a point to list its nearest neighbours."));
  const stage = h("div", { class: "emb-stage" }, canvas, tooltip);
  const card = h("section", { class: "card emb-card" }, stage, h("div", { class: "emb-status" }, progress, info), legend, colorbar, problems);
  el.append(
    h(
      "div",
      { class: "toolbar emb-toolbar" },
      h("label", {}, "run ", runSel),
      h("label", {}, "tag ", tagSel),
      h("label", {}, "step ", stepSel),
      h("label", {}, "projection ", methodSel),
      h("label", {}, "view ", dimsSel),
      resetView,
      h("label", {}, "colour by ", colorSel),
      h("label", {}, "label ", labelSel),
      search,
      thumbsLabel,
      h("label", {}, "neighbours ", kSel, metricSel),
    ),
    message,
    h("div", { class: "emb-main" }, card, panel),
  );

  let tags: TagEntry[] = [];
  let proj: ProjectionResponse | null = null;
  let labels: string[] = [];
  let cats: Categories | null = null;
  let scale: NumericScale | null = null;
  let view: ViewBox = FITTED;
  let worker: Worker | null = null;
  let matches: boolean[] = [];
  let flat: Float64Array = new Float64Array(0);
  let map: ScreenMap = { scale: 1, cx: 0, cy: 0 };
  let radius = 0;
  let yaw = 0.6;
  let pitch = 0.35;
  let selected = -1; // position among the shown points
  let neighbors: NeighborsResponse | null = null;
  let neighborSet = new Set<number>(); // positions among the shown points
  let position = new Map<number, number>(); // matrix index -> position
  let seq = 0;
  let sprite: HTMLImageElement | null = null;
  let disposed = false;

  const cssSize = (): [number, number] => {
    const w = Math.max(300, stage.clientWidth || 600);
    const hgt = Math.max(260, Math.min(900, window.innerHeight - 250));
    return [w, hgt];
  };

  function project(): void {
    if (!proj) return;
    const three = proj.coords[0]?.length === 3;
    flat = rotate(proj.coords, three ? yaw : 0, three ? pitch : 0);
    const [w, hgt] = cssSize();
    map = applyView(fitScreen(flat, w, hgt, PAD, three ? radius : undefined), view, w, hgt);
  }

  function colorOf(i: number): string {
    if (scale) return scale.colors[i] as string;
    return cats ? (cats.colors[i] as string) : PLAIN_COLOR;
  }

  function draw(): void {
    const [w, hgt] = cssSize();
    const dpr = window.devicePixelRatio || 1;
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(hgt * dpr);
    canvas.style.width = `${w}px`;
    canvas.style.height = `${hgt}px`;
    const g = canvas.getContext("2d");
    if (!g) return;
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, hgt);
    if (!proj) {
      canvas.dataset.points = "0";
      return;
    }
    project();
    const three = proj.coords[0]?.length === 3;
    const anyMatch = matches.some(Boolean);
    const n = proj.coords.length;
    const order = three ? depthOrder(flat) : Array.from({ length: n }, (_, i) => i);
    let zlo = Infinity, zhi = -Infinity;
    if (three) for (let i = 0; i < n; i++) { const z = flat[i * 3 + 2] as number; zlo = Math.min(zlo, z); zhi = Math.max(zhi, z); }
    const r0 = n > 3000 ? 2 : 3;
    const tiles = thumbs.checked && sprite?.complete && sprite.naturalWidth > 0 && proj.sprite_dim && n <= MAX_THUMBS ? sprite : null;
    let drawnThumbs = 0;
    for (const i of order) {
      if (tiles && proj.sprite_dim) {
        const [x, y] = toScreen(flat, i, map);
        const [tw, th] = proj.sprite_dim;
        const cell = spriteCell(proj.indices[i] as number, proj.points, proj.sprite_dim);
        const size = THUMB_PX * (three && zhi > zlo ? 0.7 + 0.6 * (((flat[i * 3 + 2] as number) - zlo) / (zhi - zlo)) : 1);
        const sw = size * Math.min(1, tw / th), sh = size * Math.min(1, th / tw);
        g.globalAlpha = anyMatch && !matches[i] ? 0.15 : 1;
        g.drawImage(tiles, cell.x, cell.y, tw, th, x - sw / 2, y - sh / 2, sw, sh);
        g.strokeStyle = colorOf(i); // the colour as a frame
        g.lineWidth = 1.5;
        g.strokeRect(x - sw / 2, y - sh / 2, sw, sh);
        drawnThumbs++;
        continue;
      }
      const [x, y] = toScreen(flat, i, map);
      const depth = three && zhi > zlo ? ((flat[i * 3 + 2] as number) - zlo) / (zhi - zlo) : 1;
      const dim = anyMatch && !matches[i];
      g.globalAlpha = dim ? 0.15 : three ? 0.45 + 0.55 * depth : 0.85;
      g.fillStyle = colorOf(i);
      g.beginPath();
      g.arc(x, y, three ? r0 * (0.7 + 0.6 * depth) : r0, 0, 2 * Math.PI);
      g.fill();
    }
    g.globalAlpha = 1;
    const ring = (i: number, r: number, color: string, width: number): void => {
      const [x, y] = toScreen(flat, i, map);
      g.strokeStyle = color;
      g.lineWidth = width;
      g.beginPath();
      g.arc(x, y, r, 0, 2 * Math.PI);
      g.stroke();
    };
    for (let i = 0; i < n; i++) if (anyMatch && matches[i]) ring(i, r0 + 2, "#b8860b", 1.5);
    for (const i of neighborSet) ring(i, r0 + 3, "#d62728", 2);
    if (selected >= 0) ring(selected, r0 + 5, "#111", 2.5);
    drawAxes(g, w, hgt, three);
    canvas.dataset.points = String(n);
    canvas.dataset.thumbs = String(drawnThumbs);
    canvas.dataset.total = String(proj.points);
    canvas.dataset.dims = String(three ? 3 : 2);
    canvas.dataset.matches = String(matches.filter(Boolean).length);
    canvas.dataset.selected = selected >= 0 ? String(proj.indices[selected]) : "";
    canvas.dataset.neighbors = String(neighborSet.size);
    canvas.dataset.colorBy = colorSel.value;
    canvas.dataset.colorScale = scale ? "numeric" : cats ? "categories" : "none";
    canvas.dataset.method = methodSel.value;
    canvas.dataset.zoom = view.zoom.toFixed(3);
    canvas.dataset.pan = `${view.dx.toFixed(1)},${view.dy.toFixed(1)}`;
    canvas.dataset.rotation = `${yaw.toFixed(3)},${pitch.toFixed(3)}`;
    if (n) {
      const [x, y] = toScreen(flat, 0, map);
      canvas.dataset.point0 = `${x.toFixed(1)},${y.toFixed(1)}`;
    }
  }

  function drawAxes(g: CanvasRenderingContext2D, w: number, hgt: number, three: boolean): void {
    if (!proj) return;
    const ev = proj.explained_variance;
    const tsne = methodSel.value === "tsne" || methodSel.value === "umap";
    const pct = (k: number): string => (tsne ? `${methodName()} ${k + 1}` : `PC${k + 1} (${(100 * (ev[k] ?? 0)).toFixed(1)}%)`);
    g.fillStyle = "#555";
    g.font = "11px sans-serif";
    if (!three) {
      g.strokeStyle = "#ccc";
      g.lineWidth = 1;
      g.beginPath();
      g.moveTo(PAD / 2, hgt - PAD / 2);
      g.lineTo(w - PAD / 2, hgt - PAD / 2);
      g.moveTo(PAD / 2, hgt - PAD / 2);
      g.lineTo(PAD / 2, PAD / 2);
      g.stroke();
      g.textAlign = "right";
      g.fillText(`${pct(0)} →`, w - PAD / 2, hgt - PAD / 2 - 4);
      g.save();
      g.translate(PAD / 2 + 12, PAD / 2);
      g.rotate(-Math.PI / 2);
      g.textAlign = "right";
      g.fillText(`${pct(1)} →`, 0, 0);
      g.restore();
      g.fillStyle = "#888";
      g.textAlign = "right";
      g.fillText(view === FITTED ? "wheel to zoom · drag to pan" : `zoom ×${view.zoom.toFixed(1)} · reset view to fit`, w - 8, 14);
      return;
    }
    // a small triad of the three components, rotated with the cloud
    const axes = rotate([[1, 0, 0], [0, 1, 0], [0, 0, 1]], yaw, pitch);
    const ox = 44, oy = hgt - 44, len = 30;
    const tags: { text: string; x: number; y: number; left: number; right: number }[] = [];
    for (let k = 0; k < 3; k++) {
      const x = ox + (axes[k * 3] as number) * len, y = oy - (axes[k * 3 + 1] as number) * len;
      g.strokeStyle = ["#c0392b", "#27ae60", "#2c6fbb"][k] as string;
      g.lineWidth = 2;
      g.beginPath();
      g.moveTo(ox, oy);
      g.lineTo(x, y);
      g.stroke();
      const len2d = Math.hypot(x - ox, y - oy);
      if (len2d <= 12) continue; // an axis seen end-on gets no label
      // the label past the axis's tip, on its side
      const ux = (x - ox) / len2d, uy = (y - oy) / len2d;
      const text = pct(k), width = g.measureText(text).width;
      const lx = x + ux * 6, ly = y + uy * 6 + (uy > 0 ? 8 : 0);
      tags.push({ text, x: lx, y: ly, left: ux >= 0 ? lx : lx - width, right: ux >= 0 ? lx + width : lx });
    }
    tags.sort((a, b) => a.y - b.y);
    tags.forEach((t, i) => {
      for (const p of tags.slice(0, i)) {
        if (Math.abs(t.y - p.y) < 12 && t.left < p.right && p.left < t.right) t.y = p.y + 12; // labels never overlap
      }
      g.textAlign = "left";
      g.fillText(t.text, t.left, t.y);
    });
    g.fillStyle = "#888";
    g.textAlign = "right";
    g.fillText("drag to rotate · wheel to zoom", w - 8, hgt - 8);
  }

  function thumb(pos: number): HTMLElement | null {
    if (!proj?.sprite_dim || !sprite) return null;
    const idx = proj.indices[pos] as number;
    const [w, hgt] = proj.sprite_dim;
    const cell = spriteCell(idx, proj.points, proj.sprite_dim);
    const zoom = Math.max(1, Math.min(6, 48 / Math.max(w, hgt))); // small thumbnails scaled up
    const div = h("div", { class: "emb-thumb" });
    div.style.width = `${w * zoom}px`;
    div.style.height = `${hgt * zoom}px`;
    div.style.backgroundImage = `url("${sprite.src}")`;
    div.style.backgroundPosition = `-${cell.x * zoom}px -${cell.y * zoom}px`;
    div.style.backgroundSize = `${cell.columns * w * zoom}px auto`;
    return div;
  }

  function details(pos: number): HTMLElement {
    const p = proj as ProjectionResponse;
    const row = p.metadata[pos] ?? [];
    const table = h("table", { class: "emb-meta" });
    table.append(h("tr", {}, h("th", {}, "index"), h("td", {}, String(p.indices[pos]))));
    p.columns.forEach((c, k) => table.append(h("tr", {}, h("th", {}, c), h("td", {}, row[k] ?? ""))));
    const out = h("div", {}, h("div", { class: "emb-label" }, labels[pos] ?? ""), table);
    const t = thumb(pos);
    if (t) out.prepend(t);
    return out;
  }

  function showTooltip(pos: number, x: number, y: number): void {
    if (pos < 0 || !proj) {
      tooltip.hidden = true;
      return;
    }
    tooltip.replaceChildren(details(pos));
    tooltip.dataset.index = String(proj.indices[pos]);
    tooltip.hidden = false;
    const [w, hgt] = cssSize();
    const tw = tooltip.offsetWidth, th = tooltip.offsetHeight;
    tooltip.style.left = `${x + 14 + tw <= w ? x + 14 : Math.max(0, x - 14 - tw)}px`; // never over the point
    tooltip.style.top = `${y + 14 + th <= hgt ? y + 14 : Math.max(0, y - 14 - th)}px`;
  }

  function renderPanel(): void {
    if (!proj || selected < 0) {
      panel.replaceChildren(h("p", { class: "muted" }, "Click a point to list its nearest neighbours."));
      return;
    }
    const idx = proj.indices[selected] as number;
    const head = h("div", { class: "emb-selected", "data-index": String(idx) }, h("h3", {}, `point ${idx}`), details(selected));
    const list = h("ol", { class: "emb-neighbors" });
    if (neighbors && neighbors.index === idx) {
      const labelCol = Number(labelSel.value);
      for (const nb of neighbors.neighbors) {
        const name = labelCol >= 0 && nb.metadata[labelCol] !== undefined ? nb.metadata[labelCol] : `#${nb.index}`;
        const li = h(
          "li",
          { "data-index": String(nb.index), class: position.has(nb.index) ? "" : "off-canvas" },
          h("span", { class: "emb-nb-label" }, name as string),
          h("span", { class: "emb-nb-dist" }, formatNumber(nb.distance)),
        );
        li.title = position.has(nb.index) ? "select" : "not among the drawn (sampled) points";
        li.addEventListener("click", () => {
          const pos = position.get(nb.index);
          if (pos !== undefined) void select(pos);
        });
        list.append(li);
      }
    } else {
      list.append(h("li", { class: "muted" }, "loading…"));
    }
    const clear = h("button", { type: "button", id: "emb-clear" }, "clear");
    clear.addEventListener("click", () => void select(-1));
    panel.replaceChildren(head, h("h4", {}, `nearest ${kSel.value} (${metricSel.value})`, " ", clear), list);
  }

  async function select(pos: number): Promise<void> {
    selected = pos;
    neighbors = null;
    neighborSet = new Set();
    renderPanel();
    draw();
    if (pos < 0 || !proj) return;
    const p = proj;
    const mine = ++seq;
    try {
      neighbors = await getJson<NeighborsResponse>(`${API}/neighbors`, {
        run: p.run, tag: p.tag, step: p.step, i: p.indices[pos], k: kSel.value, metric: metricSel.value,
      });
    } catch (err) {
      panel.append(h("p", { class: "error-text" }, String(err)));
      return;
    }
    if (mine !== seq || proj !== p) return;
    neighborSet = new Set(neighbors.neighbors.map((nb) => position.get(nb.index)).filter((x): x is number => x !== undefined));
    renderPanel();
    draw();
  }

  function recolor(): void {
    if (!proj) return;
    const col = Number(colorSel.value);
    const values = col >= 0 ? proj.metadata.map((r) => r[col] ?? "") : null;
    // a numeric column with many values: a continuous scale and a colour bar, not a legend
    scale = values ? numericScale(values) : null;
    cats = values && !scale ? categorize(values) : null;
    colorbar.hidden = !scale;
    if (scale) {
      const ramp = h("span", { class: "emb-ramp" });
      ramp.style.background = `linear-gradient(to right, ${[0, 0.25, 0.5, 0.75, 1].map(scaleColor).join(", ")})`;
      colorbar.replaceChildren(
        h("span", { class: "emb-colorbar-name" }, proj.columns[col] ?? ""),
        h("span", { class: "emb-colorbar-min" }, formatNumber(scale.min)),
        ramp,
        h("span", { class: "emb-colorbar-max" }, formatNumber(scale.max)),
      );
    } else {
      colorbar.replaceChildren();
    }
    legend.replaceChildren(
      ...(cats?.legend ?? []).map((e) => {
        const sw = h("span", { class: "tt-swatch" });
        sw.style.background = e.color;
        return h("span", { class: "emb-legend-item", "data-value": e.value, title: `${e.count} points` }, sw, `${e.value} (${e.count})`);
      }),
    );
    draw();
  }

  function relabel(): void {
    if (!proj) return;
    labels = pointLabels(proj, Number(labelSel.value));
    matches = matchLabels(labels, search.value);
    const count = matches.filter(Boolean).length;
    search.title = search.value ? `${count} matching points` : "";
    search.dataset.matches = String(count);
    renderPanel();
    draw();
  }

  function methodName(): string {
    return methodSel.value === "umap" ? "UMAP" : "t-SNE";
  }

  async function loadProjection(): Promise<void> {
    const run = runSel.value, tag = tagSel.value, step = stepSel.value;
    if (!run || !tag || step === "") return;
    const mine = ++seq;
    worker?.terminate();
    worker = null;
    progress.hidden = true;
    tooltip.hidden = true; // it described a point of the previous projection
    // t-SNE and UMAP: both run in the page's worker on a capped sample of 50 components
    const tsne = methodSel.value === "tsne" || methodSel.value === "umap";
    const name = methodName();
    info.textContent = "computing the projection…";
    let body: ProjectionResponse;
    try {
      // t-SNE starts from the points' first 50 principal components, on a capped sample
      const query = tsne
        ? { run, tag, step, dims: TSNE_INPUT_DIMS, max_points: TSNE_MAX_POINTS }
        : { run, tag, step, dims: dimsSel.value };
      body = await getJson<ProjectionResponse>(`${API}/projection`, query);
    } catch (err) {
      if (mine !== seq) return;
      proj = null;
      info.textContent = `error: ${String(err)}`;
      info.classList.add("error-text");
      draw();
      return;
    }
    if (mine !== seq || disposed) return;
    info.classList.remove("error-text");
    const same = proj && proj.run === body.run && proj.tag === body.tag && proj.step === body.step;
    const keepIdx = same && selected >= 0 ? (proj as ProjectionResponse).indices[selected] : undefined;
    const dims = Number(dimsSel.value);
    const input = body.coords;
    if (tsne) body = { ...body, coords: input.map((r) => r.slice(0, dims)) }; // PCA until t-SNE moves
    if (!same || tsne) view = FITTED;
    proj = body;
    radius = radiusOf(body.coords);
    position = new Map(body.indices.map((idx, pos) => [idx, pos]));
    const cols: [string, string][] = body.columns.map((c, k) => [String(k), c]);
    fill(colorSel, [["-1", "(none)"], ...cols], same ? colorSel.value : String(defaultColorColumn(body.columns, body.metadata)));
    fill(labelSel, cols.length ? cols : [["-1", "index"]], same ? labelSel.value : cols.length ? "0" : "-1");
    sprite = null;
    if (body.sprite_dim) {
      const img = new Image();
      img.addEventListener("load", () => {
        if (sprite === img && thumbs.checked) draw();
      });
      img.src = `${API}/sprite?${new URLSearchParams({ run, tag, step })}`;
      sprite = img;
    }
    thumbs.disabled = !body.sprite_dim || body.shown > MAX_THUMBS;
    if (thumbs.disabled) thumbs.checked = false;
    thumbsLabel.classList.toggle("muted", thumbs.disabled);
    const parts = [
      `${body.shown.toLocaleString()} of ${body.points.toLocaleString()} points`,
      `${body.features} dims`,
    ];
    if (tsne) {
      if (body.sampled) parts.push(`${name} runs on at most ${TSNE_MAX_POINTS.toLocaleString()} points: a random sample`);
    } else {
      parts.push(varianceText(body.explained_variance));
      if (body.sampled) parts.push(`sampled: ${body.shown.toLocaleString()} points drawn at random, PCA fitted on ${body.fit_points.toLocaleString()}`);
    }
    const summary = parts.join(" · ");
    info.textContent = tsne ? `${summary} · ${name} starting…` : summary;
    if (tsne) runTsne(body, input, dims, summary);
    problems.textContent = body.problems.join(" ");
    labels = pointLabels(body, Number(labelSel.value));
    matches = matchLabels(labels, search.value);
    search.dataset.matches = String(matches.filter(Boolean).length);
    recolor();
    const pos = keepIdx === undefined ? -1 : (position.get(keepIdx) ?? -1);
    await select(pos);
  }

  /** Run t-SNE or UMAP (the method chosen) in a worker; each progress message redraws the layout. */
  function runTsne(body: ProjectionResponse, input: number[][], dims: number, summary: string): void {
    const umap = methodSel.value === "umap";
    const w = new Worker(new URL("./tsne.worker.ts", import.meta.url), { type: "module" });
    worker = w;
    progress.hidden = false;
    progress.value = 0;
    canvas.dataset.tsneIteration = "0";
    w.onmessage = (e: MessageEvent<TsneProgress>) => {
      // a newer projection replaced this worker (seq also counts neighbour requests)
      if (disposed || worker !== w) return;
      const m = e.data;
      proj = { ...body, coords: m.coords };
      radius = radiusOf(m.coords);
      progress.value = m.iteration / m.iterations;
      info.textContent = umap
        ? `${summary} · UMAP ${m.done ? "done" : "running"}: epoch ${m.iteration} of ${m.iterations} (${UMAP_NEIGHBORS} neighbours)`
        : `${summary} · t-SNE ${m.done ? "done" : "running"}: iteration ${m.iteration} of ${m.iterations} (perplexity ${TSNE_PERPLEXITY})`;
      canvas.dataset.tsneIteration = String(m.iteration);
      if (m.done) {
        progress.hidden = true;
        w.terminate();
        worker = null;
      }
      draw();
    };
    w.onerror = (e) => {
      info.textContent = `${umap ? "UMAP" : "t-SNE"} failed: ${e.message}`;
      info.classList.add("error-text");
      progress.hidden = true;
    };
    const req: TsneRequest = umap
      ? { coords: input, dims, iterations: UMAP_EPOCHS, perplexity: TSNE_PERPLEXITY, seed: 1, method: "umap" }
      : { coords: input, dims, iterations: TSNE_ITERATIONS, perplexity: TSNE_PERPLEXITY, seed: 1 };
    w.postMessage(req);
  }

  async function loadSteps(): Promise<void> {
    const run = runSel.value, tag = tagSel.value;
    if (!run || !tag) return;
    const body = await getJson<EmbeddingsResponse>(`${API}/embeddings`, { run, tag });
    const keep = stepSel.value;
    const items: [string, string][] = body.embeddings.map((e) => [String(e.step), String(e.step)]);
    fill(stepSel, items, keep);
    if (!items.some(([v]) => v === keep) && items.length) stepSel.value = (items[items.length - 1] as [string, string])[0];
    await loadProjection();
  }

  function fillTags(): void {
    const run = runSel.value;
    const forRun = tags.filter((t) => t.runs.includes(run)).map((t): [string, string] => [t.tag, t.tag]);
    fill(tagSel, forRun, tagSel.value);
  }

  async function fetchTags(): Promise<void> {
    const runs = ctx.state.selectedRuns();
    tags = runs.length ? (await getJson<{ tags: TagEntry[] }>(`${API}/tags`, { run: runs })).tags : [];
    const withData = runs.filter((r) => tags.some((t) => t.runs.includes(r)));
    fill(runSel, withData.map((r) => [r, r]), runSel.value);
    fillTags();
    message.textContent = tags.length ? "" : "No embeddings in the selected runs (add_embedding writes them).";
    card.hidden = panel.hidden = !tags.length;
    if (!tags.length) {
      proj = null;
      return;
    }
    await loadSteps();
  }

  let drag: { x: number; y: number; yaw: number; pitch: number; view: ViewBox; moved: boolean } | null = null;
  canvas.addEventListener("mousedown", (e) => {
    drag = { x: e.offsetX, y: e.offsetY, yaw, pitch, view, moved: false };
  });
  canvas.addEventListener("mousemove", (e) => {
    if (drag && Math.hypot(e.offsetX - drag.x, e.offsetY - drag.y) > 3) drag.moved = true;
    if (drag?.moved && proj?.coords[0]?.length === 3) {
      yaw = drag.yaw + (e.offsetX - drag.x) * 0.01;
      pitch = Math.max(-1.5, Math.min(1.5, drag.pitch + (e.offsetY - drag.y) * 0.01));
      tooltip.hidden = true;
      draw();
      return;
    }
    if (drag?.moved && proj) {
      // 2-D: drag pans
      view = { ...drag.view, dx: drag.view.dx + e.offsetX - drag.x, dy: drag.view.dy + e.offsetY - drag.y };
      tooltip.hidden = true;
      draw();
      return;
    }
    showTooltip(hitTest(flat, map, e.offsetX, e.offsetY, 8), e.offsetX, e.offsetY);
  });
  canvas.addEventListener("mouseleave", () => {
    tooltip.hidden = true;
    drag = null;
  });
  canvas.addEventListener("mouseup", (e) => {
    const click = drag !== null && !drag.moved;
    drag = null;
    if (click) void select(hitTest(flat, map, e.offsetX, e.offsetY, 8));
  });

  canvas.addEventListener(
    "wheel",
    (e) => {
      if (!proj) return;
      e.preventDefault(); // the page does not scroll under the scatter
      const [w, hgt] = cssSize();
      view = zoomAt(view, Math.exp(-e.deltaY * 0.002), e.offsetX, e.offsetY, w, hgt);
      tooltip.hidden = true;
      draw();
    },
    { passive: false },
  );
  resetView.addEventListener("click", () => {
    view = FITTED;
    draw();
  });
  methodSel.addEventListener("change", () => void loadProjection());
  runSel.addEventListener("change", () => {
    fillTags();
    void loadSteps();
  });
  tagSel.addEventListener("change", () => void loadSteps());
  stepSel.addEventListener("change", () => void loadProjection());
  dimsSel.addEventListener("change", () => void loadProjection());
  colorSel.addEventListener("change", () => recolor());
  labelSel.addEventListener("change", () => relabel());
  search.addEventListener("input", () => relabel());
  thumbs.addEventListener("change", () => draw());
  for (const s of [kSel, metricSel]) s.addEventListener("change", () => void select(selected));
  const onResize = (): void => draw();
  window.addEventListener("resize", onResize);
  void fetchTags();
  return {
    refresh: () => void fetchTags(),
    dispose: () => {
      disposed = true;
      worker?.terminate();
      window.removeEventListener("resize", onResize);
    },
  };
}
