// 3-D surface of a loss landscape in raw WebGL: shaded, viridis-coloured, with the training path.
import { colour, extent, grid, toIndex, type Landscape } from "./draw";

const VS = `
attribute vec3 pos;
attribute vec3 col;
attribute vec3 nrm;
uniform mat4 mvp;
uniform float lit;
varying vec3 vcol;
void main() {
  gl_Position = mvp * vec4(pos, 1.0);
  gl_PointSize = 5.0;
  float d = abs(dot(normalize(nrm), normalize(vec3(0.4, 0.6, 0.7))));
  vcol = col * mix(1.0, 0.45 + 0.55 * d, lit);
}`;
const FS = `
precision mediump float;
varying vec3 vcol;
void main() { gl_FragColor = vec4(vcol, 1.0); }`;

type Mat = Float32Array;

function mul(a: Mat, b: Mat): Mat {
  const o = new Float32Array(16);
  for (let i = 0; i < 4; i++)
    for (let j = 0; j < 4; j++) {
      let s = 0;
      for (let k = 0; k < 4; k++) s += a[k * 4 + j]! * b[i * 4 + k]!;
      o[i * 4 + j] = s;
    }
  return o;
}

function perspective(fovy: number, aspect: number, near: number, far: number): Mat {
  const f = 1 / Math.tan(fovy / 2);
  const nf = 1 / (near - far);
  return new Float32Array([f / aspect, 0, 0, 0, 0, f, 0, 0, 0, 0, (far + near) * nf, -1, 0, 0, 2 * far * near * nf, 0]);
}

function rotX(a: number): Mat {
  const c = Math.cos(a);
  const s = Math.sin(a);
  return new Float32Array([1, 0, 0, 0, 0, c, s, 0, 0, -s, c, 0, 0, 0, 0, 1]);
}

function rotZ(a: number): Mat {
  const c = Math.cos(a);
  const s = Math.sin(a);
  return new Float32Array([c, s, 0, 0, -s, c, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]);
}

function translate(x: number, y: number, z: number): Mat {
  return new Float32Array([1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, x, y, z, 1]);
}

/** Vertices (pos, colour, normal interleaved, 9 floats each) of the triangles and the path. */
export function mesh(ls: Landscape, log: boolean): { tris: Float32Array; path: Float32Array } {
  const v = grid(ls, log);
  const rows = v.length;
  const cols = v[0]?.length ?? 0;
  const ext = extent(v) ?? [0, 1];
  const span = ext[1] > ext[0] ? ext[1] - ext[0] : 1;
  const X = (j: number): number => (cols > 1 ? (2 * j) / (cols - 1) - 1 : 0);
  const Y = (i: number): number => (rows > 1 ? (2 * i) / (rows - 1) - 1 : 0);
  const Z = (val: number): number => ((val - ext[0]) / span) * 0.9;
  const out: number[] = [];
  const at = (i: number, j: number): number => v[i]![j]!;
  const normal = (i: number, j: number): [number, number, number] => {
    const zl = at(i, Math.max(0, j - 1));
    const zr = at(i, Math.min(cols - 1, j + 1));
    const zd = at(Math.max(0, i - 1), j);
    const zu = at(Math.min(rows - 1, i + 1), j);
    const dx = Number.isFinite(zl) && Number.isFinite(zr) ? (Z(zr) - Z(zl)) / (X(Math.min(cols - 1, j + 1)) - X(Math.max(0, j - 1)) || 1) : 0;
    const dy = Number.isFinite(zd) && Number.isFinite(zu) ? (Z(zu) - Z(zd)) / (Y(Math.min(rows - 1, i + 1)) - Y(Math.max(0, i - 1)) || 1) : 0;
    return [-dx, -dy, 1];
  };
  const vert = (i: number, j: number): void => {
    const val = at(i, j);
    const [r, g, b] = colour((val - ext[0]) / span);
    out.push(X(j), Y(i), Z(val), r / 255, g / 255, b / 255, ...normal(i, j));
  };
  for (let i = 0; i + 1 < rows; i++)
    for (let j = 0; j + 1 < cols; j++) {
      if (![at(i, j), at(i, j + 1), at(i + 1, j), at(i + 1, j + 1)].every(Number.isFinite)) continue;
      vert(i, j); vert(i, j + 1); vert(i + 1, j + 1);
      vert(i, j); vert(i + 1, j + 1); vert(i + 1, j);
    }
  const path: number[] = [];
  const xs = ls.x.map((q) => q ?? Number.NaN);
  const ys = ls.y.map((q) => q ?? Number.NaN);
  for (const p of ls.path ?? []) {
    if (p[0] == null || p[1] == null) continue;
    const fj = toIndex(xs, p[0]);
    const fi = toIndex(ys, p[1]);
    // height: the stored loss when there is one, else the grid value at the nearest node
    let val = p.length > 2 && p[2] != null ? p[2] : at(Math.round(Math.min(rows - 1, Math.max(0, fi))), Math.round(Math.min(cols - 1, Math.max(0, fj))));
    if (log) val = val > 0 ? Math.log10(val) : Number.NaN;
    if (!Number.isFinite(val)) continue;
    path.push(X(fj), Y(fi), Z(val) + 0.02, 0.88, 0.34, 0.35, 0, 0, 1);
  }
  return { tris: new Float32Array(out), path: new Float32Array(path) };
}

const FLOOR_LINES = 5 * 2 + 4;

/** A light grid on the floor (z = 0) and the vertical edges of the box, as line pairs. */
function floor(): Float32Array {
  const out: number[] = [];
  const c = [0.75, 0.75, 0.75];
  const line = (a: number[], b: number[]): void => {
    out.push(...a, ...c, 0, 0, 1, ...b, ...c, 0, 0, 1);
  };
  for (let k = 0; k < 5; k++) {
    const t = -1 + k / 2;
    line([t, -1, 0], [t, 1, 0]);
    line([-1, t, 0], [1, t, 0]);
  }
  for (const [x, y] of [[-1, -1], [1, -1], [1, 1], [-1, 1]]) line([x!, y!, 0], [x!, y!, 0.9]);
  return new Float32Array(out);
}

export interface Surface {
  draw(ls: Landscape, log: boolean): number;
  dispose(): void;
}

/** A WebGL surface on `canvas`, rotated by dragging; `null` when WebGL is unavailable. */
export function createSurface(canvas: HTMLCanvasElement): Surface | null {
  let gl: WebGLRenderingContext | null = null;
  try {
    gl = canvas.getContext("webgl", { preserveDrawingBuffer: true, antialias: true }) as WebGLRenderingContext | null;
  } catch {
    gl = null;
  }
  if (!gl) return null;
  const g = gl;
  const shader = (type: number, src: string): WebGLShader => {
    const s = g.createShader(type)!;
    g.shaderSource(s, src);
    g.compileShader(s);
    return s;
  };
  const prog = g.createProgram()!;
  g.attachShader(prog, shader(g.VERTEX_SHADER, VS));
  g.attachShader(prog, shader(g.FRAGMENT_SHADER, FS));
  g.linkProgram(prog);
  if (!g.getProgramParameter(prog, g.LINK_STATUS)) return null;
  const buf = g.createBuffer();
  const pathBuf = g.createBuffer();
  const floorBuf = g.createBuffer();
  g.bindBuffer(g.ARRAY_BUFFER, floorBuf);
  g.bufferData(g.ARRAY_BUFFER, floor(), g.STATIC_DRAW);
  const loc = { pos: g.getAttribLocation(prog, "pos"), col: g.getAttribLocation(prog, "col"), nrm: g.getAttribLocation(prog, "nrm") };
  const mvpLoc = g.getUniformLocation(prog, "mvp");
  const litLoc = g.getUniformLocation(prog, "lit");
  let yaw = -0.6;
  let pitch = -0.7;
  let dist = 3.6;
  let data: { tris: Float32Array; path: Float32Array } = { tris: new Float32Array(), path: new Float32Array() };

  function bind(b: WebGLBuffer | null): void {
    g.bindBuffer(g.ARRAY_BUFFER, b);
    const stride = 9 * 4;
    g.vertexAttribPointer(loc.pos, 3, g.FLOAT, false, stride, 0);
    g.vertexAttribPointer(loc.col, 3, g.FLOAT, false, stride, 12);
    g.vertexAttribPointer(loc.nrm, 3, g.FLOAT, false, stride, 24);
    for (const l of [loc.pos, loc.col, loc.nrm]) g.enableVertexAttribArray(l);
  }

  function render(): void {
    g.viewport(0, 0, canvas.width, canvas.height);
    g.clearColor(1, 1, 1, 1);
    g.clear(g.COLOR_BUFFER_BIT | g.DEPTH_BUFFER_BIT);
    g.enable(g.DEPTH_TEST);
    g.useProgram(prog);
    const view = mul(translate(0, 0, -dist), mul(rotX(pitch), mul(rotZ(yaw), translate(0, 0, -0.45))));
    g.uniformMatrix4fv(mvpLoc, false, mul(perspective(0.8, canvas.width / canvas.height, 0.1, 50), view));
    g.uniform1f(litLoc, 1);
    bind(buf);
    g.drawArrays(g.TRIANGLES, 0, data.tris.length / 9);
    g.uniform1f(litLoc, 0);
    bind(floorBuf);
    g.drawArrays(g.LINES, 0, FLOOR_LINES * 2);
    if (data.path.length) {
      g.uniform1f(litLoc, 0);
      bind(pathBuf);
      g.drawArrays(g.LINE_STRIP, 0, data.path.length / 9);
      g.drawArrays(g.POINTS, 0, data.path.length / 9);
    }
  }

  let drag: [number, number] | null = null;
  const down = (e: MouseEvent): void => {
    drag = [e.clientX, e.clientY];
  };
  const move = (e: MouseEvent): void => {
    if (!drag) return;
    yaw += (e.clientX - drag[0]) * 0.01;
    pitch = Math.max(-1.55, Math.min(0, pitch + (e.clientY - drag[1]) * 0.01));
    drag = [e.clientX, e.clientY];
    render();
  };
  const up = (): void => {
    drag = null;
  };
  const wheel = (e: WheelEvent): void => {
    e.preventDefault();
    dist = Math.max(2, Math.min(12, dist * (e.deltaY > 0 ? 1.1 : 0.9)));
    render();
  };
  canvas.addEventListener("mousedown", down);
  window.addEventListener("mousemove", move);
  window.addEventListener("mouseup", up);
  canvas.addEventListener("wheel", wheel, { passive: false });
  return {
    draw(ls: Landscape, log: boolean): number {
      data = mesh(ls, log);
      g.bindBuffer(g.ARRAY_BUFFER, buf);
      g.bufferData(g.ARRAY_BUFFER, data.tris, g.STATIC_DRAW);
      g.bindBuffer(g.ARRAY_BUFFER, pathBuf);
      g.bufferData(g.ARRAY_BUFFER, data.path, g.STATIC_DRAW);
      render();
      return data.tris.length / 27;
    },
    dispose(): void {
      window.removeEventListener("mousemove", move);
      window.removeEventListener("mouseup", up);
    },
  };
}
