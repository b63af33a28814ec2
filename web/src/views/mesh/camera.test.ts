import { describe, expect, it } from "vitest";
import { basis, bounds, farToNear, fitCamera, orbit, project, shade, ticks, zoom, MAX_PITCH } from "./camera";

const CUBE = [-1, -1, -1, 1, -1, -1, 1, 1, -1, -1, 1, -1, -1, -1, 1, 1, -1, 1, 1, 1, 1, -1, 1, 1];

describe("bounds", () => {
  it("spans the vertices and skips non-finite ones", () => {
    const b = bounds([0, 0, 0, 2, 4, NaN, 1, 2, 6]);
    expect(b.min).toEqual([0, 0, 0]);
    expect(b.max).toEqual([2, 4, 6]);
    expect(b.center).toEqual([1, 2, 3]);
    expect(b.radius).toBeCloseTo(Math.hypot(2, 4, 6) / 2);
  });
  it("gives an empty cloud a unit radius", () => {
    expect(bounds([]).radius).toBe(1);
    expect(bounds([3, 3, 3]).center).toEqual([3, 3, 3]);
  });
});

describe("the orbit camera", () => {
  it("has an orthonormal basis looking at its target", () => {
    const c = { target: [1, 2, 3] as [number, number, number], yaw: 0.7, pitch: 0.4, distance: 5, fov: 1 };
    const { right, up, forward, eye } = basis(c);
    const dot = (a: number[], b: number[]) => a[0]! * b[0]! + a[1]! * b[1]! + a[2]! * b[2]!;
    expect(dot(right, up)).toBeCloseTo(0);
    expect(dot(right, forward)).toBeCloseTo(0);
    expect(dot(up, forward)).toBeCloseTo(0);
    expect(dot(up, up)).toBeCloseTo(1);
    expect(up[1]).toBeGreaterThan(0); // up stays up
    const to = [c.target[0] - eye[0], c.target[1] - eye[1], c.target[2] - eye[2]];
    expect(dot(to, forward)).toBeCloseTo(5);
  });
  it("projects the target to the centre and keeps the whole box in view when fitted", () => {
    const b = bounds(CUBE);
    const c = fitCamera(b);
    const [x, y] = project([0, 0, 0], c, 400, 300);
    expect(x).toBeCloseTo(200);
    expect(y).toBeCloseTo(150);
    const p = project(CUBE, c, 400, 300);
    for (let i = 0; i < 8; i++) {
      expect(p[3 * i]).toBeGreaterThan(0);
      expect(p[3 * i]).toBeLessThan(400);
      expect(p[3 * i + 1]).toBeGreaterThan(0);
      expect(p[3 * i + 1]).toBeLessThan(300);
      expect(p[3 * i + 2]).toBeGreaterThan(0); // in front of the camera
    }
  });
  it("turns with a drag, never past the poles, and zooms within limits", () => {
    const b = bounds(CUBE);
    const c = fitCamera(b);
    const turned = orbit(c, 100, 0);
    expect(turned.yaw).toBeCloseTo(c.yaw - 1);
    expect(turned.pitch).toBe(c.pitch);
    expect(orbit(c, 0, 10_000).pitch).toBe(MAX_PITCH);
    expect(orbit(c, 0, -10_000).pitch).toBe(-MAX_PITCH);
    expect(zoom(c, 0.5, b).distance).toBeCloseTo(c.distance / 2);
    expect(zoom(c, 1e-9, b).distance).toBeCloseTo(b.radius * 0.05);
  });
  it("draws a y-up world with y up on screen", () => {
    const c = { target: [0, 0, 0] as [number, number, number], yaw: 0, pitch: 0, distance: 10, fov: 1 };
    const p = project([0, 1, 0, 1, 0, 0], c, 200, 200);
    expect(p[1]).toBeLessThan(100); // +y is above the centre
    expect(p[3]).toBeGreaterThan(100); // +x is right of it
  });
});

describe("painting and shading", () => {
  it("orders far to near", () => {
    const depths = [3, 9, 1, 5];
    expect([...farToNear(4, (i) => depths[i]!)]).toEqual([1, 3, 0, 2]);
  });
  it("lights a face turned to the light most, either side", () => {
    const tri = [0, 0, 0, 1, 0, 0, 0, 1, 0]; // in the z = 0 plane
    expect(shade(tri, 0, 1, 2, [0, 0, 1])).toBeCloseTo(1);
    expect(shade(tri, 0, 2, 1, [0, 0, 1])).toBeCloseTo(1); // the back face too
    expect(shade(tri, 0, 1, 2, [1, 0, 0])).toBeCloseTo(0.35);
    expect(shade([0, 0, 0, 0, 0, 0, 0, 0, 0], 0, 1, 2, [0, 0, 1])).toBe(0.35); // degenerate
  });
  it("picks round ticks", () => {
    expect(ticks(-2.6, 2.9, 3)).toEqual([-2, 0, 2]);
    expect(ticks(-0.9, 0.95, 3)).toEqual([-0.5, 0, 0.5]); // a short axis still gets three
    expect(ticks(0, 1, 4)).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
    expect(ticks(0, 100, 4)).toEqual([0, 20, 40, 60, 80, 100]);
    expect(ticks(3.01, 3.05, 3)).toEqual([3.01, 3.02, 3.03, 3.04, 3.05]);
    expect(ticks(5, 5)).toEqual([5]);
  });
});
