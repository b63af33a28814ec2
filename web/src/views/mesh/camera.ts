// The mesh view's maths: bounds, an orbit camera, perspective projection, depth order and
// flat shading. Pure functions of arrays, so vitest checks them without a canvas.

export type Vec3 = [number, number, number];

export interface Bounds {
  min: Vec3;
  max: Vec3;
  center: Vec3;
  /** Half the bounding box's diagonal (1 for an empty or single-point cloud). */
  radius: number;
}

/** Bounds of flat ``x, y, z, ...`` vertices (non-finite coordinates skipped). */
export function bounds(v: ArrayLike<number>): Bounds {
  const min: Vec3 = [Infinity, Infinity, Infinity];
  const max: Vec3 = [-Infinity, -Infinity, -Infinity];
  for (let i = 0; i + 2 < v.length; i += 3) {
    for (let k = 0; k < 3; k++) {
      const x = v[i + k] as number;
      if (!Number.isFinite(x)) continue;
      if (x < min[k]!) min[k] = x;
      if (x > max[k]!) max[k] = x;
    }
  }
  for (let k = 0; k < 3; k++) {
    if (min[k]! > max[k]!) min[k] = max[k] = 0;
  }
  const center: Vec3 = [(min[0] + max[0]) / 2, (min[1] + max[1]) / 2, (min[2] + max[2]) / 2];
  const half = Math.hypot(max[0] - min[0], max[1] - min[1], max[2] - min[2]) / 2;
  return { min, max, center, radius: half > 0 ? half : 1 };
}

/** An orbit camera around ``target``: ``yaw`` about the vertical (y) axis, ``pitch`` up
 * from the horizontal plane, both in radians, at ``distance`` from the target. */
export interface Camera {
  target: Vec3;
  yaw: number;
  pitch: number;
  distance: number;
  /** Vertical field of view, radians. */
  fov: number;
}

export const MAX_PITCH = Math.PI / 2 - 0.01;
export const DEFAULT_FOV = (50 * Math.PI) / 180;

/** The camera that shows the whole of ``b`` from a three-quarter view. */
export function fitCamera(b: Bounds, fov: number = DEFAULT_FOV): Camera {
  // the bounding sphere fits the view's height with a margin
  const distance = (b.radius / Math.sin(fov / 2)) * 1.1;
  return { target: [...b.center], yaw: Math.PI / 5, pitch: Math.PI / 7, distance, fov };
}

/** The camera after dragging ``dx, dy`` pixels (``speed`` radians per pixel). */
export function orbit(c: Camera, dx: number, dy: number, speed = 0.01): Camera {
  const pitch = Math.max(-MAX_PITCH, Math.min(MAX_PITCH, c.pitch + dy * speed));
  return { ...c, yaw: c.yaw - dx * speed, pitch };
}

/** The camera moved ``factor`` times as far from the target (wheel zoom), within limits. */
export function zoom(c: Camera, factor: number, b: Bounds): Camera {
  const distance = Math.max(b.radius * 0.05, Math.min(b.radius * 50, c.distance * factor));
  return { ...c, distance };
}

/** The camera's right, up and forward unit vectors (forward points at the target). */
export function basis(c: Camera): { right: Vec3; up: Vec3; forward: Vec3; eye: Vec3 } {
  const cp = Math.cos(c.pitch);
  // from the target to the eye
  const back: Vec3 = [cp * Math.sin(c.yaw), Math.sin(c.pitch), cp * Math.cos(c.yaw)];
  const eye: Vec3 = [c.target[0] + back[0] * c.distance, c.target[1] + back[1] * c.distance, c.target[2] + back[2] * c.distance];
  const forward: Vec3 = [-back[0], -back[1], -back[2]];
  const right: Vec3 = [Math.cos(c.yaw), 0, -Math.sin(c.yaw)];
  const up = cross(right, forward);
  return { right, up, forward, eye };
}

export function cross(a: Vec3, b: Vec3): Vec3 {
  return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
}

/** Screen x, y (pixels, y down) and depth (distance along the view) of each vertex, for a
 * ``width`` x ``height`` view; depth <= near marks a vertex behind the camera. */
export function project(v: ArrayLike<number>, c: Camera, width: number, height: number): Float64Array {
  const { right, up, forward, eye } = basis(c);
  const f = height / 2 / Math.tan(c.fov / 2);
  const n = Math.floor(v.length / 3);
  const out = new Float64Array(n * 3);
  for (let i = 0; i < n; i++) {
    const x = (v[3 * i] as number) - eye[0];
    const y = (v[3 * i + 1] as number) - eye[1];
    const z = (v[3 * i + 2] as number) - eye[2];
    const depth = x * forward[0] + y * forward[1] + z * forward[2];
    const sx = x * right[0] + y * right[1] + z * right[2];
    const sy = x * up[0] + y * up[1] + z * up[2];
    const d = depth > NEAR ? depth : NEAR;
    out[3 * i] = width / 2 + (sx * f) / d;
    out[3 * i + 1] = height / 2 - (sy * f) / d;
    out[3 * i + 2] = depth;
  }
  return out;
}

export const NEAR = 1e-6;

/** Indices ``0..count-1`` ordered far to near by ``depthOf`` (the painter's order). */
export function farToNear(count: number, depthOf: (i: number) => number): Uint32Array {
  const depth = new Float64Array(count);
  for (let i = 0; i < count; i++) depth[i] = depthOf(i);
  const order = new Uint32Array(count);
  for (let i = 0; i < count; i++) order[i] = i;
  order.sort((a, b) => depth[b]! - depth[a]!);
  return order;
}

/** The unit normal of triangle ``a, b, c`` (``null`` for a degenerate one). */
export function faceNormal(v: ArrayLike<number>, a: number, b: number, c: number): Vec3 | null {
  const p = (i: number, k: number) => v[3 * i + k] as number;
  const n = cross([p(b, 0) - p(a, 0), p(b, 1) - p(a, 1), p(b, 2) - p(a, 2)], [p(c, 0) - p(a, 0), p(c, 1) - p(a, 1), p(c, 2) - p(a, 2)]);
  const len = Math.hypot(n[0], n[1], n[2]);
  return len > 0 ? [n[0] / len, n[1] / len, n[2] / len] : null;
}

/** Brightness 0.35-1 of a triangle facing the light (two-sided: a back face is lit too). */
export function shade(v: ArrayLike<number>, a: number, b: number, c: number, light: Vec3): number {
  const p = (i: number, k: number) => v[3 * i + k] as number;
  const u: Vec3 = [p(b, 0) - p(a, 0), p(b, 1) - p(a, 1), p(b, 2) - p(a, 2)];
  const w: Vec3 = [p(c, 0) - p(a, 0), p(c, 1) - p(a, 1), p(c, 2) - p(a, 2)];
  const nrm = cross(u, w);
  const len = Math.hypot(nrm[0], nrm[1], nrm[2]);
  if (!(len > 0)) return 0.35;
  const l = Math.hypot(light[0], light[1], light[2]) || 1;
  const d = Math.abs((nrm[0] * light[0] + nrm[1] * light[1] + nrm[2] * light[2]) / (len * l));
  return 0.35 + 0.65 * d;
}

/** Round tick values (1, 2 or 5 times a power of ten apart) for an axis from ``lo`` to
 * ``hi``: the finest spacing that gives at most ``n + 1`` of them. */
export function ticks(lo: number, hi: number, n = 4): number[] {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / n;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [0.5, 1, 2, 5, 10].map((m) => m * mag).find((s) => (hi - lo) / s <= n + 1 + 1e-9) ?? 10 * mag;
  const out: number[] = [];
  for (let k = Math.ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9; k++) out.push(Number((k * step).toPrecision(12)) || 0);
  return out;
}
