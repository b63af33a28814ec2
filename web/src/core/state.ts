// Shared board state: runs, which are selected, their colours; views subscribe to changes.
import type { RunEntry, RunsResponse } from "../api/types";
import { defaultColor } from "./colors";

export type Listener = (reason: "selection" | "data") => void;

export class BoardState {
  runs: RunEntry[] = [];
  generation = -1;
  /** The server is still reading the logdir: runs are listed, their tags not yet. */
  loading = false;
  limits: Record<string, number | null> = {};
  readonly selected = new Set<string>();
  private readonly colors = new Map<string, string>();
  private readonly known = new Set<string>();
  private readonly listeners = new Set<Listener>();

  /** Apply a /api/runs answer; new runs start selected. Returns whether data changed. */
  update(response: RunsResponse): boolean {
    const loading = response.loading === true;
    const changed =
      response.generation !== this.generation || response.runs.length !== this.runs.length || loading !== this.loading;
    this.runs = response.runs;
    this.generation = response.generation;
    this.loading = loading;
    this.limits = response.limits;
    response.runs.forEach((run, i) => {
      if (!this.known.has(run.name)) {
        this.known.add(run.name);
        this.selected.add(run.name);
      }
      if (!this.colors.has(run.name)) this.colors.set(run.name, defaultColor(i));
    });
    return changed;
  }

  color(run: string): string {
    return this.colors.get(run) ?? "#444";
  }

  setColor(run: string, color: string): void {
    this.colors.set(run, color);
    this.emit("selection");
  }

  setSelected(run: string, on: boolean): void {
    if (on) this.selected.add(run);
    else this.selected.delete(run);
    this.emit("selection");
  }

  setAll(names: string[], on: boolean): void {
    for (const n of names) {
      if (on) this.selected.add(n);
      else this.selected.delete(n);
    }
    this.emit("selection");
  }

  selectedRuns(): string[] {
    return this.runs.map((r) => r.name).filter((n) => this.selected.has(n));
  }

  subscribe(fn: Listener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  emit(reason: "selection" | "data"): void {
    for (const fn of [...this.listeners]) fn(reason);
  }
}

export interface ViewContext {
  state: BoardState;
}

export interface ViewInstance {
  /** Called when the selection or the data changed. */
  refresh(reason: "selection" | "data"): void;
  dispose(): void;
}

export type RenderFn = (el: HTMLElement, ctx: ViewContext) => ViewInstance;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") el.className = v;
    else if (k === "text") el.textContent = v;
    else el.setAttribute(k, v);
  }
  for (const c of children) el.append(c);
  return el;
}
