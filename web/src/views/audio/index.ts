// Audio view: one card per tag; a step slider over the steps of every selected run and, per
// run, an <audio> player of its clip(s) at that step with sample rate, duration and label.
import { buildUrl, concatLists, getJson, getJsonByRuns } from "../../api/client";
import type { TagEntry } from "../../api/types";
import { compileRegex } from "../../core/runlist";
import { h, type ViewContext, type ViewInstance } from "../../core/state";
import { clipText, clipsAtStep, unionSteps, type ClipEntry, type ClipsResponse, type RunClips } from "./model";
import "./audio.css";

const API = "/api/views/audio";

class AudioCard {
  readonly el: HTMLElement;
  private readonly slider: HTMLInputElement;
  private readonly label: HTMLElement;
  private readonly rows: HTMLElement;
  private readonly info: HTMLElement;
  private data: RunClips[] = [];
  private steps: number[] = [];
  /** The step asked for; null: each run's last step. */
  private step: number | null = null;
  private seq = 0;

  constructor(
    readonly tag: string,
    public runs: string[],
    private readonly color: (run: string) => string,
  ) {
    this.slider = h("input", { type: "range", class: "audio-step", min: "0", max: "0", step: "1", value: "0" });
    this.label = h("span", { class: "audio-step-label" });
    this.rows = h("div", { class: "audio-rows" });
    this.info = h("div", { class: "chart-info" });
    this.el = h(
      "section",
      { class: "card audio-card", "data-tag": tag },
      h("div", { class: "card-head" }, h("h3", {}, tag)),
      h("div", { class: "card-tools" }, h("label", {}, "step ", this.slider, this.label)),
      this.rows,
      this.info,
    );
    this.slider.addEventListener("input", () => {
      this.step = this.steps[Number(this.slider.value)] ?? null;
      this.draw();
    });
  }

  async load(): Promise<void> {
    const seq = ++this.seq;
    if (!this.runs.length) return;
    let body: ClipsResponse;
    try {
      body = await getJsonByRuns<ClipsResponse>(`${API}/clips`, { tag: this.tag }, this.runs, concatLists("runs", "missing"));
    } catch (err) {
      this.info.textContent = `error: ${String(err)}`;
      this.info.classList.add("error-text");
      return;
    }
    if (seq !== this.seq) return;
    this.info.classList.remove("error-text");
    this.data = body.runs;
    this.steps = unionSteps(this.data);
    this.slider.max = String(Math.max(0, this.steps.length - 1));
    this.slider.disabled = this.steps.length < 2;
    this.info.textContent = body.missing.length ? `no clips in ${body.missing.join(", ")}` : "";
    this.draw();
  }

  private stepText(): string {
    if (!this.steps.length) return "";
    const shown = this.step ?? this.steps[this.steps.length - 1];
    return `${shown} (${this.steps.length} steps)`;
  }

  private player(run: string, c: ClipEntry): HTMLElement {
    const audio = h("audio", { controls: "", preload: "metadata" });
    audio.src = buildUrl(`${API}/audio`, { run, tag: this.tag, i: c.i });
    audio.dataset.i = String(c.i);
    const row = h("div", { class: "audio-clip" }, audio, h("span", { class: "audio-meta" }, clipText(c)));
    row.dataset.step = String(c.step);
    row.dataset.sampleRate = String(c.sample_rate);
    row.dataset.duration = c.duration === null ? "" : String(c.duration);
    row.dataset.label = c.label;
    return row;
  }

  private draw(): void {
    const pos = this.step === null ? this.steps.length - 1 : this.steps.indexOf(this.step);
    this.slider.value = String(Math.max(0, pos));
    this.label.textContent = this.stepText();
    this.el.dataset.step = String(this.step ?? "last");
    const shown: string[] = [];
    const children = this.data.map((r) => {
      const clips = clipsAtStep(r.clips, this.step);
      shown.push(clips.map((c) => String(c.step)).join(",") || "-");
      const sw = h("span", { class: "tt-swatch" });
      sw.style.background = this.color(r.run);
      const row = h("div", { class: "audio-run", "data-run": r.run }, h("div", { class: "audio-run-name", title: r.run }, sw, r.run), ...clips.map((c) => this.player(r.run, c)));
      return row;
    });
    this.rows.replaceChildren(...children);
    this.el.dataset.runs = this.data.map((r) => r.run).join("|");
    this.el.dataset.steps = shown.join("|");
  }
}

export function render(el: HTMLElement, ctx: ViewContext): ViewInstance {
  const tagFilter = h("input", { type: "search", id: "audio-tag-filter", placeholder: "filter tags (regex)" });
  const message = h("p", { class: "muted", id: "audio-message" });
  const grid = h("div", { class: "cards audio-cards", id: "audio-cards" });
  el.append(h("div", { class: "toolbar" }, tagFilter, h("span", { class: "muted" }, "one player per run at the step of the card's slider")), message, grid);
  const cards = new Map<string, AudioCard>();
  let tags: TagEntry[] = [];

  function layout(): void {
    const re = compileRegex(tagFilter.value);
    tagFilter.classList.toggle("invalid", re === null);
    const shown = tags.filter((t) => re === null || re.test(t.tag));
    for (const tag of [...cards.keys()]) if (!shown.some((t) => t.tag === tag)) cards.delete(tag);
    grid.replaceChildren();
    for (const t of shown) {
      let card = cards.get(t.tag);
      if (!card) {
        card = new AudioCard(t.tag, t.runs, (run) => ctx.state.color(run));
        cards.set(t.tag, card);
      } else {
        card.runs = t.runs;
      }
      grid.append(card.el);
      void card.load();
    }
    message.textContent = tags.length ? `${shown.length} of ${tags.length} audio tags` : "No audio tags in the selected runs.";
  }

  async function fetchTags(): Promise<void> {
    const runs = ctx.state.selectedRuns();
    tags = runs.length ? (await getJson<{ tags: TagEntry[] }>(`${API}/tags`, { run: runs })).tags : [];
    layout();
  }

  tagFilter.addEventListener("input", () => layout());
  void fetchTags();
  return { refresh: () => void fetchTags(), dispose: () => undefined };
}
