// The shell: tabs from GET /api/views, the run list, and a poll that reloads on new data.
import { getJson } from "../api/client";
import type { RunsResponse, ViewEntry } from "../api/types";
import { VIEWS } from "../views/registry";
import { loaderFor } from "./viewloader";
import { RunList } from "./runlist";
import { BoardState, h, type ViewInstance } from "./state";

export async function start(root: HTMLElement): Promise<void> {
  const state = new BoardState();
  const params = new URLSearchParams(location.search);
  const pollMs = Math.max(200, Number(params.get("poll") ?? "5000") || 5000);

  const tabs = h("nav", { class: "tabs", id: "tabs" });
  // When the tabs do not fit (14 tabs at 1280 px), arrows and a fade say that more are there
  const arrow = (side: "left" | "right", glyph: string) =>
    h("button", {
      type: "button", class: "tab-scroll off", id: `tabs-${side}`, tabindex: "-1",
      "aria-label": `More tabs to the ${side}`, title: `More tabs to the ${side}`,
    }, glyph);
  const toLeft = arrow("left", "‹");
  const toRight = arrow("right", "›");
  const tabbar = h("div", { class: "tabbar", id: "tabbar" }, toLeft, tabs, toRight);
  const status = h("span", { class: "status", id: "status" });
  const side = h("aside", { class: "sidebar" });
  const main = h("main", { class: "content", id: "content" });
  root.append(
    h("header", {}, h("span", { class: "logo" }, "tensorsight"), tabbar, status),
    h("div", { class: "layout" }, side, main),
  );
  function markOverflow(): void {
    const hidden = tabs.scrollWidth - tabs.clientWidth;
    const before = hidden > 1 && tabs.scrollLeft > 1;
    const after = hidden > 1 && tabs.scrollLeft < hidden - 1;
    toLeft.classList.toggle("off", !before);
    toRight.classList.toggle("off", !after);
    tabbar.classList.toggle("more-left", before);
    tabbar.classList.toggle("more-right", after);
  }
  const page = (dir: number) => tabs.scrollBy({ left: dir * Math.max(80, tabs.clientWidth * 0.7), behavior: "smooth" });
  toLeft.addEventListener("click", () => page(-1));
  toRight.addEventListener("click", () => page(1));
  tabs.addEventListener("scroll", markOverflow, { passive: true });
  window.addEventListener("resize", markOverflow);
  const runList = new RunList(side, state);

  /** View modules whose download started before the run list arrived (the first view's). */
  const preloaded = new Map<string, ReturnType<NonNullable<ReturnType<typeof loaderFor>>>>();
  let current: ViewInstance | null = null;
  let currentName = "";
  const entries = new Map<string, ViewEntry>();

  async function show(name: string): Promise<void> {
    currentName = name;
    for (const b of tabs.querySelectorAll("button")) {
      b.classList.toggle("selected", b.dataset.view === name);
      if (b.dataset.view === name) b.scrollIntoView({ block: "nearest", inline: "nearest" });
    }
    current?.dispose();
    current = null;
    main.replaceChildren();
    const entry = entries.get(name);
    const loader = entry ? loaderFor(entry, VIEWS) : undefined;
    if (!loader) {
      main.append(h("p", { class: "error-text" }, `This board has no front end for view ${name}.`));
      return;
    }
    let mod;
    try {
      mod = await (preloaded.get(name) ?? loader());
    } catch (err) {
      if (currentName !== name) return;
      main.append(h("p", { class: "error-text" }, `The front end of view ${name} failed to load: ${String(err)}`));
      return;
    }
    if (currentName !== name) return;
    const el = h("div", { class: `view view-${name}`, id: `view-${name}` });
    main.append(el);
    current = mod.render(el, { state });
    location.hash = name;
  }

  state.subscribe((reason) => {
    // the view first: its requests go out before the run list's rows are redrawn (1,000
    // rows once the first read of a sweep is done)
    current?.refresh(reason);
    runList.render();
  });

  async function poll(): Promise<void> {
    try {
      const runs = await getJson<RunsResponse>("/api/runs");
      const wasLoading = state.loading;
      const changed = state.update(runs);
      if (wasLoading && !state.loading) {
        void getJson<{ views: ViewEntry[] }>("/api/views").then((r) => markTabs(r.views), () => undefined);
      }
      status.textContent = state.loading
        ? `${runs.runs.length} runs · reading the logdir…`
        : `${runs.runs.length} runs · updated ${new Date().toLocaleTimeString()}`;
      status.title = status.textContent;
      status.classList.remove("error-text");
      if (changed) state.emit("data");
    } catch (err) {
      status.textContent = `server unreachable: ${String(err)}`;
      status.title = status.textContent;
      status.classList.add("error-text");
    }
  }

  const buttons = new Map<string, HTMLButtonElement>();
  /** Mark the tabs from a /api/views answer (again once the logdir's first read is done). */
  function markTabs(list: ViewEntry[]): void {
    for (const v of list) {
      const button = buttons.get(v.name);
      if (!button) continue;
      entries.set(v.name, v);
      button.title = v.reason;
      button.disabled = !v.enabled;
      button.classList.toggle("empty", !v.has_data);
    }
  }
  const { views } = await getJson<{ views: ViewEntry[] }>("/api/views");
  for (const v of views) {
    const button = h("button", { type: "button", "data-view": v.name }, v.title);
    buttons.set(v.name, button);
    button.addEventListener("click", () => void show(v.name));
    tabs.append(button);
  }
  markTabs(views);
  markOverflow();
  const wanted = location.hash.slice(1);
  const asked = views.find((v) => v.name === wanted && v.enabled);
  // the first view's code downloads while the run list is fetched
  const early = asked ? loaderFor(asked, VIEWS) : undefined;
  if (asked && early) {
    const promise = early();
    promise.catch(() => undefined); // show() reports a failure
    preloaded.set(asked.name, promise);
  }
  await poll();
  const first = asked ?? views.find((v) => v.has_data) ?? views[0];
  if (first) await show(first.name);
  // while the server reads the logdir the run list is polled often, so the charts come as
  // soon as the data is there
  const tick = (): void => {
    void poll().then(() => window.setTimeout(tick, state.loading ? LOADING_POLL_MS : pollMs));
  };
  window.setTimeout(tick, state.loading ? LOADING_POLL_MS : pollMs);
}

/** The run list's poll while the server reads the logdir for the first time. */
const LOADING_POLL_MS = 150;
