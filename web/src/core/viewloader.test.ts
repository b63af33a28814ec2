import { describe, expect, it } from "vitest";
import type { ViewEntry } from "../api/types";
import { type Loader, loaderFor } from "./viewloader";

const entry = (name: string, module: string | null): ViewEntry => ({
  name,
  title: name,
  enabled: true,
  has_data: true,
  reason: "",
  module,
});

describe("loaderFor", () => {
  const bundled: Loader = () => Promise.resolve({ render: () => ({ refresh() {}, dispose() {} }) });
  const builtins = { scalars: bundled };

  it("maps a built-in name to its bundled module, whatever the entry says", () => {
    expect(loaderFor(entry("scalars", null), builtins)).toBe(bundled);
    expect(loaderFor(entry("scalars", "/views/scalars/index.js"), builtins)).toBe(bundled);
  });
  it("has no loader for a view that is neither built in nor ships a module", () => {
    expect(loaderFor(entry("mystery", null), builtins)).toBeUndefined();
    expect(loaderFor(entry("toString", null), builtins)).toBeUndefined();
  });
  it("imports a third-party module and checks that it exports render", async () => {
    const good = loaderFor(entry("notes", "data:text/javascript,export function render() { return 7; }"), builtins);
    const mod = await good?.();
    expect(typeof mod?.render).toBe("function");
    const bad = loaderFor(entry("broken", "data:text/javascript,export const x = 1;"), builtins);
    await expect(bad?.()).rejects.toThrow("exports no render(el, ctx) function");
  });
});
