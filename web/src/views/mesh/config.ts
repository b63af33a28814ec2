// The writer's ``config_dict`` (torch's and tensorboardX's ``add_mesh``: three.js camera,
// lights and material) turned into what a 2-D canvas viewer can apply. Pure, so vitest
// checks it without a canvas.
import { fitCamera, MAX_PITCH, type Bounds, type Camera, type Vec3 } from "./camera";

/** A light as the flat shading uses it: ``rgb`` is the colour times the intensity (0-1+). */
export interface Light {
  rgb: Vec3;
  /** Direction the light comes from (towards the light), for directional lights. */
  from?: Vec3;
}

export interface MeshStyle {
  /** Vertical field of view in radians (``camera.fov``, degrees in three.js). */
  fov?: number;
  /** Camera position in the mesh's coordinates (``camera.position``). */
  position?: Vec3;
  /** Point size in the mesh's units (``material.size``, three.js PointsMaterial). */
  pointSize?: number;
  /** Colour of a mesh without vertex colours (``material.color``), 0-255. */
  color?: Vec3;
  /** 0-1 (``material.opacity`` with ``transparent``). */
  opacity?: number;
  /** Edges only (``material.wireframe``). */
  wireframe?: boolean;
  /** Ambient light (``AmbientLight``, ``HemisphereLight``), summed. */
  ambient?: Vec3;
  /** Lights with a direction (``DirectionalLight``; ``PointLight`` and ``SpotLight`` as
   * coming from their position). */
  lights?: Light[];
  /** Dotted keys of the config this viewer does not apply, for the card to name. */
  ignored: string[];
}

const CAMERA_KEYS = new Set(["cls", "fov", "position"]);
const MATERIAL_KEYS = new Set(["cls", "size", "color", "opacity", "transparent", "wireframe", "vertexColors"]);
const LIGHT_KEYS = new Set(["cls", "color", "intensity", "position"]);

/** Parse the config's JSON text; an empty or broken text is an empty style (the broken
 * text named in ``ignored``). */
export function parseMeshConfig(text: string): MeshStyle {
  const style: MeshStyle = { ignored: [] };
  if (!text.trim()) return style;
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    style.ignored.push("config (not JSON)");
    return style;
  }
  if (!isObject(raw)) return style;
  for (const key of Object.keys(raw)) if (!["camera", "lights", "material"].includes(key)) style.ignored.push(key);
  const camera = raw.camera;
  if (isObject(camera)) {
    if (typeof camera.cls === "string" && camera.cls !== "PerspectiveCamera") style.ignored.push(`camera.cls ${camera.cls}`);
    const fov = num(camera.fov);
    if (fov !== undefined && fov > 1 && fov < 179) style.fov = (fov * Math.PI) / 180;
    const position = vec3(camera.position);
    if (position) style.position = position;
    for (const key of Object.keys(camera)) if (!CAMERA_KEYS.has(key)) style.ignored.push(`camera.${key}`);
  }
  const material = raw.material;
  if (isObject(material)) {
    const size = num(material.size);
    if (size !== undefined && size > 0) style.pointSize = size;
    const color = rgb(material.color);
    if (color) style.color = color;
    const opacity = num(material.opacity);
    // as three.js (and so TensorBoard) draws it: opacity counts only with transparent: true
    if (opacity !== undefined && material.transparent === true) style.opacity = Math.max(0.05, Math.min(1, opacity));
    if (material.wireframe === true) style.wireframe = true;
    for (const key of Object.keys(material)) if (!MATERIAL_KEYS.has(key)) style.ignored.push(`material.${key}`);
  }
  if (Array.isArray(raw.lights)) {
    const ambient: Vec3 = [0, 0, 0];
    let hasAmbient = false;
    const lights: Light[] = [];
    raw.lights.forEach((light: unknown, i: number) => {
      if (!isObject(light)) return;
      const cls = typeof light.cls === "string" ? light.cls : "";
      const intensity = num(light.intensity) ?? 1;
      const c = rgb(light.color) ?? [255, 255, 255];
      const value: Vec3 = [(c[0] / 255) * intensity, (c[1] / 255) * intensity, (c[2] / 255) * intensity];
      if (cls === "AmbientLight" || cls === "HemisphereLight") {
        hasAmbient = true;
        for (let k = 0; k < 3; k++) ambient[k]! += value[k]!;
      } else if (cls === "DirectionalLight" || cls === "PointLight" || cls === "SpotLight") {
        // three.js's default position is (0, 1, 0): light from above
        lights.push({ rgb: value, from: vec3(light.position) ?? [0, 1, 0] });
      } else {
        style.ignored.push(`lights[${i}] ${cls || "without cls"}`);
        return;
      }
      for (const key of Object.keys(light)) if (!LIGHT_KEYS.has(key)) style.ignored.push(`lights[${i}].${key}`);
    });
    if (hasAmbient) style.ambient = ambient;
    if (lights.length || hasAmbient) style.lights = lights;
  }
  return style;
}

/** The camera that fits ``b`` at the writer's field of view, with the eye at the writer's
 * ``camera.position`` (looking at the mesh's centre) when given. */
export function configuredCamera(b: Bounds, style: MeshStyle): Camera {
  const cam = fitCamera(b, style.fov);
  if (style.position) {
    const back: Vec3 = [style.position[0] - cam.target[0], style.position[1] - cam.target[1], style.position[2] - cam.target[2]];
    const distance = Math.hypot(back[0], back[1], back[2]);
    if (distance > 0) {
      cam.distance = distance;
      cam.pitch = Math.max(-MAX_PITCH, Math.min(MAX_PITCH, Math.asin(back[1] / distance)));
      cam.yaw = Math.atan2(back[0], back[2]);
    }
  }
  return cam;
}

/** The 0-255 colour of a face of colour ``base`` with unit normal ``normal`` under the
 * style's lights (two-sided, flat; no specular: roughness and metalness are not applied).
 * Without lights: 0.35 ambient plus 0.65 from ``fallback``. */
export function lit(base: Vec3, normal: Vec3 | null, style: MeshStyle, fallback: Vec3): Vec3 {
  const lights = style.lights ?? [{ rgb: [0.65, 0.65, 0.65] as Vec3, from: fallback }];
  const ambient = style.lights ? (style.ambient ?? [0, 0, 0]) : ([0.35, 0.35, 0.35] as Vec3);
  const gain: Vec3 = [ambient[0], ambient[1], ambient[2]];
  for (const light of lights) {
    const from = light.from;
    if (!from) continue;
    let d = 1;
    if (normal) {
      const l = Math.hypot(from[0], from[1], from[2]) || 1;
      d = Math.abs((normal[0] * from[0] + normal[1] * from[1] + normal[2] * from[2]) / l);
    }
    for (let k = 0; k < 3; k++) gain[k]! += light.rgb[k]! * d;
  }
  return [Math.min(255, base[0] * gain[0]), Math.min(255, base[1] * gain[1]), Math.min(255, base[2] * gain[2])];
}

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === "object" && x !== null && !Array.isArray(x);
}

function num(x: unknown): number | undefined {
  return typeof x === "number" && Number.isFinite(x) ? x : undefined;
}

function vec3(x: unknown): Vec3 | undefined {
  if (!Array.isArray(x) || x.length !== 3 || !x.every((v) => typeof v === "number" && Number.isFinite(v))) return undefined;
  return [x[0], x[1], x[2]];
}

/** A three.js colour: ``"#rrggbb"``, ``"#rgb"`` or a number ``0xrrggbb``. */
export function rgb(x: unknown): Vec3 | undefined {
  if (typeof x === "number" && Number.isInteger(x) && x >= 0 && x <= 0xffffff) return [(x >> 16) & 255, (x >> 8) & 255, x & 255];
  if (typeof x !== "string") return undefined;
  const s = x.trim();
  const long = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(s);
  if (long) return [parseInt(long[1]!, 16), parseInt(long[2]!, 16), parseInt(long[3]!, 16)];
  const short = /^#([0-9a-f])([0-9a-f])([0-9a-f])$/i.exec(s);
  if (short) return [parseInt(short[1]!, 16) * 17, parseInt(short[2]!, 16) * 17, parseInt(short[3]!, 16) * 17];
  return undefined;
}
