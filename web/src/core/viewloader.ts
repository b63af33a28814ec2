// Which code draws a view: the bundled module of a built-in (views/registry.ts), else the ES
// module a third-party view ships (GET /api/views lists its URL; the board serves the file).
import type { ViewEntry } from "../api/types";
import type { RenderFn } from "./state";

export type ViewModule = { render: RenderFn };
export type Loader = () => Promise<ViewModule>;

/** The loader of `entry`'s front end, or undefined when the board has none for it. */
export function loaderFor(entry: ViewEntry, builtins: Record<string, Loader>): Loader | undefined {
  const bundled = Object.hasOwn(builtins, entry.name) ? builtins[entry.name] : undefined;
  if (bundled) return bundled;
  const url = entry.module;
  if (!url) return undefined;
  return async () => {
    const mod = (await import(/* @vite-ignore */ url)) as Partial<ViewModule>;
    if (typeof mod.render !== "function") throw new Error(`${url} exports no render(el, ctx) function`);
    return mod as ViewModule;
  };
}
