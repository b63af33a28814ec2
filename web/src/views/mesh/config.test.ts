import { describe, expect, it } from "vitest";
import { basis, bounds, DEFAULT_FOV, fitCamera } from "./camera";
import { configuredCamera, lit, parseMeshConfig, rgb } from "./config";

// torch's documented add_mesh example config, and a point cloud's
const TORCH_EXAMPLE = JSON.stringify({
  camera: { cls: "PerspectiveCamera", fov: 75 },
  lights: [
    { cls: "AmbientLight", color: "#ffffff", intensity: 0.75 },
    { cls: "DirectionalLight", color: "#ffffff", intensity: 0.75, position: [0, -1, 2] },
  ],
  material: { cls: "MeshStandardMaterial", roughness: 1, metalness: 0 },
});

describe("parseMeshConfig", () => {
  it("takes the camera, lights and material a canvas can apply and names the rest", () => {
    const s = parseMeshConfig(TORCH_EXAMPLE);
    expect(s.fov).toBeCloseTo((75 * Math.PI) / 180);
    expect(s.ambient).toEqual([0.75, 0.75, 0.75]);
    expect(s.lights).toEqual([{ rgb: [0.75, 0.75, 0.75], from: [0, -1, 2] }]);
    expect(s.ignored).toEqual(["material.roughness", "material.metalness"]);
  });

  it("ignores opacity unless the material is transparent, as three.js does", () => {
    for (const transparent of [undefined, false]) {
      const s = parseMeshConfig(JSON.stringify({ material: { cls: "MeshStandardMaterial", opacity: 0.3, transparent } }));
      expect(s.opacity).toBeUndefined();
    }
  });

  it("reads points, colours, opacity, wireframe and camera position", () => {
    const s = parseMeshConfig(
      JSON.stringify({
        camera: { fov: 40, position: [0, 0, 10], near: 0.1, far: 100 },
        material: { cls: "PointsMaterial", size: 0.2, color: 0xff8000, opacity: 0.5, transparent: true, wireframe: true },
        lights: [{ cls: "RectAreaLight" }],
        scene: {},
      }),
    );
    expect(s.position).toEqual([0, 0, 10]);
    expect(s.pointSize).toBe(0.2);
    expect(s.color).toEqual([255, 128, 0]);
    expect(s.opacity).toBe(0.5);
    expect(s.wireframe).toBe(true);
    expect(s.lights).toBeUndefined(); // the one light is not one a canvas draws
    expect(s.ignored).toEqual(["scene", "camera.near", "camera.far", "lights[0] RectAreaLight"]);
  });

  it("treats empty, null and broken configs as none", () => {
    expect(parseMeshConfig("")).toEqual({ ignored: [] });
    expect(parseMeshConfig("null")).toEqual({ ignored: [] });
    expect(parseMeshConfig("{not json")).toEqual({ ignored: ["config (not JSON)"] });
    // out-of-range values are dropped, not applied
    const s = parseMeshConfig(JSON.stringify({ camera: { fov: 500, position: [1, "a", 2] }, material: { size: -1, color: "red" } }));
    expect([s.fov, s.position, s.pointSize, s.color]).toEqual([undefined, undefined, undefined, undefined]);
  });

  it("parses three.js colours", () => {
    expect(rgb("#0f0")).toEqual([0, 255, 0]);
    expect(rgb("#102030")).toEqual([16, 32, 48]);
    expect(rgb(0x0000ff)).toEqual([0, 0, 255]);
    expect(rgb(-1)).toBeUndefined();
  });
});

describe("configuredCamera", () => {
  const box = bounds([-1, -1, -1, 1, 1, 1]);
  it("puts the eye at the writer's position looking at the centre", () => {
    const cam = configuredCamera(box, { position: [3, 4, 0], ignored: [] });
    expect(cam.distance).toBeCloseTo(5);
    const eye = basis(cam).eye;
    expect(eye[0]).toBeCloseTo(3);
    expect(eye[1]).toBeCloseTo(4);
    expect(eye[2]).toBeCloseTo(0);
  });
  it("fits the mesh at the writer's fov, else at the default", () => {
    const wide = configuredCamera(box, { fov: Math.PI / 2, ignored: [] });
    expect(wide.fov).toBeCloseTo(Math.PI / 2);
    expect(wide.distance).toBeLessThan(fitCamera(box).distance); // a wider view sits nearer
    expect(configuredCamera(box, { ignored: [] })).toEqual(fitCamera(box, DEFAULT_FOV));
  });
});

describe("lit", () => {
  it("adds ambient and each light by the angle to the face, clipped at 255", () => {
    const style = { ambient: [0.2, 0.2, 0.2] as [number, number, number], lights: [{ rgb: [1, 0, 0] as [number, number, number], from: [0, 0, 5] as [number, number, number] }], ignored: [] };
    expect(lit([100, 100, 100], [0, 0, 1], style, [0, 1, 0])).toEqual([120, 20, 20]);
    expect(lit([100, 100, 100], [0, 0, -1], style, [0, 1, 0])).toEqual([120, 20, 20]); // two-sided
    expect(lit([100, 100, 100], [1, 0, 0], style, [0, 1, 0])).toEqual([20, 20, 20]); // edge-on
    expect(lit([250, 0, 0], [0, 0, 1], { ...style, ambient: [1, 1, 1] }, [0, 1, 0])).toEqual([255, 0, 0]);
  });
  it("without lights keeps the viewer's own: 0.35 ambient and 0.65 from above", () => {
    const got = lit([200, 100, 0], [0, 1, 0], { ignored: [] }, [0, 1, 0]);
    expect(got[0]).toBeCloseTo(200);
    expect(got[1]).toBeCloseTo(100);
    expect(lit([200, 100, 0], null, { ignored: [] }, [0, 1, 0])[0]).toBeCloseTo(200);
  });
});
