// Mesh view: one card per mesh and run (add_mesh's point clouds and triangle meshes). Each
// card draws its mesh on a 2-D canvas: an orbit camera (drag to turn, wheel to zoom, double
// click or "reset view" to fit), a step slider, a batch entry choice, and x/y/z axes with
// their ranges along the bounding box's edges. The writer's ``config_dict`` is applied where
// a 2-D canvas can (config.ts): the camera's fov and position, the lights' colours,
// intensities and directions (flat shading), the material's colour, opacity, wireframe and
// point size; the rest (near/far planes, roughness, metalness, ...) is named on the card.
import { getJson } from "../../api/client";
import { formatNumber } from "../../core/format";
import { compileRegex } from "../../core/runlist";
import { h, type ViewContext, type ViewInstance } from "../../core/state";
import { bounds, faceNormal, farToNear, orbit, project, ticks, zoom, NEAR, type Bounds, type Camera, type Vec3 } from "./camera";
import { configuredCamera, lit, parseMeshConfig, type MeshStyle } from "./config";
import "./mesh.css";

const API = "/api/views/mesh";
/** Runs a /meshes request names (the route's limit). */
const MAX_RUNS = 500;
/** Cards drawn at once; the rest wait behind the filter. */
const MAX_CARDS = 24;
const LIGHT: Vec3 = [0.4, 0.8, 0.6];
const AXIS_COLORS = ["#d62728", "#2ca02c", "#1f77b4"];

interface MeshEntry {
  name: string;
  runs: string[];
}

export interface MeshResponse {
  run: string;
  name: string;
  step: number;
  wall_time: number;
  steps: number[];
  batch: number;
  sample: number;
  vertex_count: number;
  vertices: number[];
  faces: number[] | null;
  colors: number[] | null;
  config: string;
  downsampled: boolean;
}

class MeshCard {
  readonly el: HTMLElement;
  readonly canvas: HTMLCanvasElement;
  private readonly stepSlider: HTMLInputElement;
  private readonly stepLabel: HTMLElement;
  private readonly sample: HTMLSelectElement;
  private readonly info: HTMLElement;
  private readonly resize: ResizeObserver;
  private mesh: MeshResponse | null = null;
  private box: Bounds | null = null;
  private camera: Camera | null = null;
  private style: MeshStyle = { ignored: [] };
  private configText: string | null = null;
  private steps: number[] = [];
  private step: number | null = null;
  private seq = 0;
  private timer = 0;
  private frame = 0;

  constructor(
    readonly name: string,
    readonly run: string,
    private readonly color: () => string,
  ) {
    this.canvas = h("canvas", { class: "mesh-canvas", tabindex: "0", "aria-label": `mesh ${name} of run ${run}: drag to turn, wheel to zoom` });
    this.stepSlider = h("input", { type: "range", class: "mesh-step", min: "0", max: "0", step: "1", value: "0" });
    this.stepLabel = h("span", { class: "mesh-step-label" });
    this.sample = h("select", { class: "mesh-sample", title: "batch entry" });
    const reset = h("button", { type: "button", class: "mesh-reset", title: "fit the mesh in view (or double-click it)" }, "reset view");
    this.info = h("div", { class: "chart-info mesh-info" });
    const swatch = h("span", { class: "tt-swatch" });
    swatch.style.background = color();
    this.el = h(
      "section",
      { class: "card mesh-card", "data-mesh": name, "data-run": run },
      h("div", { class: "card-head" }, h("h3", { title: `${name} · ${run}` }, swatch, ` ${name}`, h("span", { class: "muted mesh-run" }, ` · ${run}`)), reset),
      h("div", { class: "card-tools mesh-controls" }, h("label", {}, "step ", this.stepSlider, this.stepLabel), h("label", { class: "mesh-sample-label" }, "entry ", this.sample)),
      h("div", { class: "mesh-wrap" }, this.canvas),
      this.info,
    );
    this.stepSlider.addEventListener("input", () => {
      this.step = this.steps[Number(this.stepSlider.value)] ?? null;
      this.stepLabel.textContent = this.stepText();
      window.clearTimeout(this.timer);
      this.timer = window.setTimeout(() => void this.load(), 80);
    });
    this.sample.addEventListener("change", () => void this.load());
    reset.addEventListener("click", () => this.fit());
    this.canvas.addEventListener("dblclick", () => this.fit());
    this.pointer();
    this.canvas.addEventListener(
      "wheel",
      (e) => {
        if (!this.camera || !this.box) return;
        e.preventDefault();
        this.camera = zoom(this.camera, Math.exp(e.deltaY * 0.001), this.box);
        this.schedule();
      },
      { passive: false },
    );
    this.canvas.addEventListener("keydown", (e) => {
      if (!this.camera || !this.box) return;
      const turn: Record<string, [number, number]> = { ArrowLeft: [-20, 0], ArrowRight: [20, 0], ArrowUp: [0, -20], ArrowDown: [0, 20] };
      const by = turn[e.key];
      if (by) this.camera = orbit(this.camera, by[0], by[1]);
      else if (e.key === "+" || e.key === "=") this.camera = zoom(this.camera, 0.85, this.box);
      else if (e.key === "-") this.camera = zoom(this.camera, 1 / 0.85, this.box);
      else return;
      e.preventDefault();
      this.schedule();
    });
    this.resize = new ResizeObserver(() => this.schedule());
    this.resize.observe(this.canvas);
  }

  private pointer(): void {
    let last: { x: number; y: number; id: number } | null = null;
    this.canvas.addEventListener("pointerdown", (e) => {
      last = { x: e.clientX, y: e.clientY, id: e.pointerId };
      this.canvas.setPointerCapture?.(e.pointerId);
      this.canvas.classList.add("dragging");
    });
    this.canvas.addEventListener("pointermove", (e) => {
      if (!last || e.pointerId !== last.id || !this.camera) return;
      this.camera = orbit(this.camera, e.clientX - last.x, e.clientY - last.y);
      last = { x: e.clientX, y: e.clientY, id: e.pointerId };
      this.schedule();
    });
    const end = () => {
      last = null;
      this.canvas.classList.remove("dragging");
    };
    this.canvas.addEventListener("pointerup", end);
    this.canvas.addEventListener("pointercancel", end);
  }

  private stepText(): string {
    if (!this.steps.length) return "";
    return `${this.step ?? this.steps[this.steps.length - 1]} (${this.steps.length} steps)`;
  }

  dispose(): void {
    this.resize.disconnect();
    cancelAnimationFrame(this.frame);
  }

  async load(): Promise<void> {
    const seq = ++this.seq;
    let body: MeshResponse;
    try {
      body = await getJson<MeshResponse>(`${API}/mesh`, { run: this.run, name: this.name, step: this.step ?? undefined, sample: this.sample.value || 0 });
    } catch (err) {
      this.info.textContent = `error: ${String(err)}`;
      this.info.classList.add("error-text");
      return;
    }
    if (seq !== this.seq) return;
    this.info.classList.remove("error-text");
    const first = this.mesh === null;
    this.mesh = body;
    this.steps = body.steps;
    this.stepSlider.max = String(Math.max(0, body.steps.length - 1));
    this.stepSlider.value = String(Math.max(0, body.steps.indexOf(body.step)));
    this.stepSlider.disabled = body.steps.length < 2;
    this.step = body.step;
    this.stepLabel.textContent = this.stepText();
    if (this.sample.options.length !== body.batch) {
      this.sample.replaceChildren(...Array.from({ length: body.batch }, (_, i) => h("option", { value: String(i) }, String(i))));
    }
    this.sample.value = String(body.sample);
    this.sample.disabled = body.batch < 2;
    this.box = bounds(body.vertices);
    if (body.config !== this.configText) {
      this.configText = body.config;
      this.style = parseMeshConfig(body.config);
    }
    // the camera is kept across steps (a training run's mesh moves under a fixed view)
    if (first || !this.camera) this.camera = configuredCamera(this.box, this.style);
    const faces = body.faces ? body.faces.length / 3 : 0;
    const parts = [`${formatNumber(body.vertex_count)} vertices`, faces ? `${formatNumber(faces)} faces` : "point cloud"];
    parts.push(body.colors ? "vertex colours" : "no colours");
    if (body.batch > 1) parts.push(`batch of ${body.batch}`);
    if (body.downsampled) parts.push(`${formatNumber(body.vertices.length / 3)} drawn (thinned evenly)`);
    const applied = appliedText(this.style);
    if (applied) parts.push(`config: ${applied}`);
    if (this.style.ignored.length) parts.push(`not applied: ${this.style.ignored.join(", ")}`);
    this.info.textContent = parts.join(" · ");
    this.el.dataset.ignored = this.style.ignored.join(",");
    this.el.dataset.step = String(body.step);
    this.el.dataset.vertices = String(body.vertex_count);
    this.el.dataset.faces = String(faces);
    this.draw();
  }

  private fit(): void {
    if (!this.box) return;
    this.camera = configuredCamera(this.box, this.style);
    this.schedule();
  }

  private schedule(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.draw();
    });
  }

  private draw(): void {
    const mesh = this.mesh;
    const cam = this.camera;
    const box = this.box;
    if (!mesh || !cam || !box) return;
    const dpr = window.devicePixelRatio || 1;
    const width = Math.max(1, this.canvas.clientWidth);
    const height = Math.max(1, this.canvas.clientHeight);
    if (this.canvas.width !== Math.round(width * dpr) || this.canvas.height !== Math.round(height * dpr)) {
      this.canvas.width = Math.round(width * dpr);
      this.canvas.height = Math.round(height * dpr);
    }
    const g = this.canvas.getContext("2d");
    if (!g) return;
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.fillStyle = "#fbfbfd";
    g.fillRect(0, 0, width, height);
    const v = mesh.vertices;
    const p = project(v, cam, width, height);
    const style = this.style;
    const base: Vec3 = style.color ?? hexRgb(this.color());
    const rgb = (i: number): Vec3 =>
      mesh.colors ? [mesh.colors[3 * i] ?? 0, mesh.colors[3 * i + 1] ?? 0, mesh.colors[3 * i + 2] ?? 0] : base;
    let drawn = 0;
    this.drawAxes(g, box, cam, width, height, "behind");
    g.globalAlpha = style.opacity ?? 1;
    if (mesh.faces && mesh.faces.length >= 3) {
      const f = mesh.faces;
      const count = Math.floor(f.length / 3);
      const order = farToNear(count, (t) => p[3 * f[3 * t]! + 2]! + p[3 * f[3 * t + 1]! + 2]! + p[3 * f[3 * t + 2]! + 2]!);
      g.lineJoin = "round";
      g.lineWidth = 0.5;
      for (const t of order) {
        const a = f[3 * t]!;
        const b = f[3 * t + 1]!;
        const c = f[3 * t + 2]!;
        if (p[3 * a + 2]! <= NEAR || p[3 * b + 2]! <= NEAR || p[3 * c + 2]! <= NEAR) continue;
        const [r0, g0, b0] = rgb(a);
        const [r1, g1, b1] = rgb(b);
        const [r2, g2, b2] = rgb(c);
        const [lr, lg, lb] = lit([(r0 + r1 + r2) / 3, (g0 + g1 + g2) / 3, (b0 + b1 + b2) / 3], faceNormal(v, a, b, c), style, LIGHT);
        const fill = `rgb(${Math.round(lr)},${Math.round(lg)},${Math.round(lb)})`;
        g.beginPath();
        g.moveTo(p[3 * a]!, p[3 * a + 1]!);
        g.lineTo(p[3 * b]!, p[3 * b + 1]!);
        g.lineTo(p[3 * c]!, p[3 * c + 1]!);
        g.closePath();
        g.strokeStyle = fill; // filled: hides the hairline seams between neighbours
        if (style.wireframe) {
          g.lineWidth = 1;
        } else {
          g.fillStyle = fill;
          g.fill();
        }
        g.stroke();
        drawn++;
      }
    } else {
      const n = Math.floor(v.length / 3);
      const order = farToNear(n, (i) => p[3 * i + 2]!);
      const size = n > 20_000 ? 1.5 : n > 2_000 ? 2.5 : 4;
      // material.size is in the mesh's units, drawn in perspective as three.js does
      const focal = height / 2 / Math.tan(cam.fov / 2);
      for (const i of order) {
        const depth = p[3 * i + 2]!;
        if (depth <= NEAR) continue;
        const [r, gg, b] = rgb(i);
        g.fillStyle = `rgb(${r},${gg},${b})`;
        // nearer points a little larger: depth reads without lighting
        const s = style.pointSize !== undefined ? Math.max(1, Math.min(64, (style.pointSize * focal) / depth)) : Math.max(1, Math.min(8, (size * cam.distance) / depth));
        g.fillRect(p[3 * i]! - s / 2, p[3 * i + 1]! - s / 2, s, s);
        drawn++;
      }
    }
    g.globalAlpha = 1;
    this.drawAxes(g, box, cam, width, height, "labels");
    g.fillStyle = "#666";
    g.font = "11px system-ui, sans-serif";
    g.textAlign = "left";
    g.fillText(`step ${mesh.step}`, 8, height - 8);
    const d = this.canvas.dataset;
    d.drawn = String(drawn);
    d.yaw = cam.yaw.toFixed(3);
    d.pitch = cam.pitch.toFixed(3);
    d.distance = cam.distance.toPrecision(4);
    d.fov = ((cam.fov * 180) / Math.PI).toFixed(1);
  }

  /** The bounding box's three edges from its low corner, x red, y green, z blue: the lines
   * first ("behind" the mesh), their names and end values last, over it. */
  private drawAxes(g: CanvasRenderingContext2D, b: Bounds, cam: Camera, width: number, height: number, layer: "behind" | "labels"): void {
    const o = b.min;
    const ends: Vec3[] = [
      [b.max[0], o[1], o[2]],
      [o[0], b.max[1], o[2]],
      [o[0], o[1], b.max[2]],
    ];
    const pts = project([...o, ...ends.flat()], cam, width, height);
    const at = (i: number): [number, number, number] => [pts[3 * i]!, pts[3 * i + 1]!, pts[3 * i + 2]!];
    const origin = at(0);
    if (origin[2] <= NEAR) return;
    g.font = "11px system-ui, sans-serif";
    for (let k = 0; k < 3; k++) {
      const end = at(k + 1);
      if (end[2] <= NEAR) continue;
      if (layer === "behind") {
        g.strokeStyle = AXIS_COLORS[k]!;
        g.globalAlpha = 0.8;
        g.lineWidth = 1.5;
        g.beginPath();
        g.moveTo(origin[0], origin[1]);
        g.lineTo(end[0], end[1]);
        g.stroke();
        g.globalAlpha = 1;
        continue;
      }
      const lo = o[k]!;
      const hi = b.max[k]!;
      g.fillStyle = AXIS_COLORS[k]!;
      g.textAlign = "center";
      // the axis name past its end, pushed out from the origin so it clears the line
      const dx = end[0] - origin[0];
      const dy = end[1] - origin[1];
      const len = Math.hypot(dx, dy) || 1;
      const lx = clamp(end[0] + (dx / len) * 14, 10, width - 10);
      const ly = clamp(end[1] + (dy / len) * 14 + 4, 12, height - 4);
      g.font = "bold 12px system-ui, sans-serif";
      g.fillText("xyz"[k]!, lx, ly);
      g.font = "10px system-ui, sans-serif";
      if (hi > lo) {
        for (const t of ticks(lo, hi, 3)) {
          const f = (t - lo) / (hi - lo);
          const px = origin[0] + dx * f;
          const py = origin[1] + dy * f;
          g.fillText(formatNumber(t), clamp(px - (dy / len) * 12, 12, width - 12), clamp(py + (dx / len) * 12 + 3, 10, height - 4));
        }
      } else {
        g.fillText(formatNumber(lo), clamp(origin[0] + dx / 2, 12, width - 12), clamp(origin[1] + dy / 2 + 12, 10, height - 4));
      }
    }
  }
}

/** What of the writer's config the card applies, in a few words ("" when nothing). */
export function appliedText(s: MeshStyle): string {
  const out: string[] = [];
  if (s.fov !== undefined) out.push(`fov ${Math.round((s.fov * 180) / Math.PI)}°`);
  if (s.position) out.push("camera position");
  if (s.lights) {
    const n = s.lights.length + (s.ambient ? 1 : 0);
    out.push(`${n} ${n === 1 ? "light" : "lights"}`);
  }
  if (s.color) out.push("material colour");
  if (s.opacity !== undefined) out.push(`opacity ${s.opacity}`);
  if (s.wireframe) out.push("wireframe");
  if (s.pointSize !== undefined) out.push(`point size ${s.pointSize}`);
  return out.join(", ");
}

function clamp(v: number, lo: number, hi: number): number {
  return Math.max(lo, Math.min(hi, v));
}

export function hexRgb(color: string): [number, number, number] {
  const m = /^#?([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(color.trim());
  if (!m) return [80, 110, 160];
  return [parseInt(m[1]!, 16), parseInt(m[2]!, 16), parseInt(m[3]!, 16)];
}

export function render(el: HTMLElement, ctx: ViewContext): ViewInstance {
  const filter = h("input", { type: "search", id: "mesh-filter", placeholder: "filter meshes (regex)" });
  const message = h("p", { class: "muted", id: "mesh-message" });
  const grid = h("div", { class: "cards mesh-cards", id: "mesh-cards" });
  el.append(
    h("div", { class: "toolbar" }, filter, h("span", { class: "muted" }, "drag a mesh to turn it, wheel to zoom, double-click to fit; arrow keys turn a focused mesh")),
    message,
    grid,
  );
  const cards = new Map<string, MeshCard>();
  let meshes: MeshEntry[] = [];
  let seq = 0;

  function layout(): void {
    const re = compileRegex(filter.value);
    filter.classList.toggle("invalid", re === null);
    const wanted: [string, string][] = [];
    for (const m of meshes) if (re === null || re.test(m.name)) for (const run of m.runs) wanted.push([m.name, run]);
    const shown = wanted.slice(0, MAX_CARDS);
    const keys = new Set(shown.map(([n, r]) => JSON.stringify([n, r])));
    for (const [key, card] of cards) {
      if (!keys.has(key)) {
        card.dispose();
        cards.delete(key);
      }
    }
    grid.replaceChildren();
    for (const [name, run] of shown) {
      const key = JSON.stringify([name, run]);
      let card = cards.get(key);
      if (!card) {
        card = new MeshCard(name, run, () => ctx.state.color(run));
        cards.set(key, card);
      }
      grid.append(card.el);
      void card.load();
    }
    const more = wanted.length > shown.length ? ` (the first ${shown.length} drawn; filter to see others)` : "";
    const names = new Set(wanted.map(([n]) => n)).size;
    const plural = (k: number, word: string): string => `${k} ${word}${k === 1 ? "" : "es"}`;
    message.textContent = meshes.length
      ? `${plural(names, "mesh")} of ${meshes.length} shown, ${wanted.length} ${wanted.length === 1 ? "card" : "cards"} (one per run)${more}`
      : "No meshes in the selected runs.";
  }

  async function fetchMeshes(): Promise<void> {
    const mine = ++seq;
    const runs = ctx.state.selectedRuns().slice(0, MAX_RUNS);
    const got = runs.length ? (await getJson<{ meshes: MeshEntry[] }>(`${API}/meshes`, { run: runs })).meshes : [];
    if (mine !== seq) return;
    meshes = got;
    layout();
  }

  filter.addEventListener("input", () => layout());
  void fetchMeshes();
  return {
    refresh: () => void fetchMeshes(),
    dispose: () => {
      for (const card of cards.values()) card.dispose();
    },
  };
}
