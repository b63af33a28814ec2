// Images view: per-card step slider, global step slider, brightness/contrast, actual size.
import { buildUrl, getJson } from "../../api/client";
import type { ImageEntry, ImageListResponse, TagEntry } from "../../api/types";
import { h, type ViewContext, type ViewInstance } from "../../core/state";

interface Card {
  images: ImageEntry[];
  slider: HTMLInputElement;
  show: (pos: number) => void;
}

/** Position of the last image whose step is <= `step` (the first image when none). */
export function positionAtStep(images: ImageEntry[], step: number): number {
  let best = 0;
  images.forEach((im, i) => {
    if (im.step <= step) best = i;
  });
  return best;
}

export function render(el: HTMLElement, ctx: ViewContext): ViewInstance {
  const brightness = h("input", { type: "range", id: "img-brightness", min: "0", max: "3", step: "0.05", value: "1" });
  const contrast = h("input", { type: "range", id: "img-contrast", min: "0", max: "3", step: "0.05", value: "1" });
  const actual = h("input", { type: "checkbox", id: "img-actual" });
  const globalStep = h("input", { type: "range", id: "img-global-step", min: "0", max: "0", step: "1", value: "0" });
  const globalLabel = h("span", { id: "img-global-label" }, "");
  const grid = h("div", { class: "cards", id: "image-cards" });
  el.append(
    h(
      "div",
      { class: "toolbar" },
      h("label", {}, "brightness ", brightness),
      h("label", {}, "contrast ", contrast),
      h("label", {}, actual, " actual size"),
      h("label", {}, "all tags at step ", globalStep, globalLabel),
    ),
    grid,
  );
  const cards: Card[] = [];
  let steps: number[] = [];

  function applyLook(): void {
    for (const img of grid.querySelectorAll("img")) {
      img.style.filter = `brightness(${brightness.value}) contrast(${contrast.value})`;
      img.classList.toggle("actual", actual.checked);
    }
  }

  async function refresh(): Promise<void> {
    const runs = ctx.state.selectedRuns();
    const tags = runs.length ? (await getJson<{ tags: TagEntry[] }>("/api/views/images/tags", { run: runs })).tags : [];
    grid.replaceChildren();
    cards.length = 0;
    const allSteps = new Set<number>();
    if (!tags.length) grid.append(h("p", { class: "muted" }, "No image tags in the selected runs."));
    for (const t of tags) {
      for (const run of t.runs) {
        const { images } = await getJson<ImageListResponse>("/api/views/images/list", { run, tag: t.tag });
        images.forEach((im) => allSteps.add(im.step));
        const slider = h("input", { type: "range", class: "img-step", min: "0", max: String(Math.max(0, images.length - 1)), step: "1" });
        const label = h("span", { class: "img-label" });
        const img = h("img", { alt: `${t.tag} ${run}` });
        const show = (pos: number): void => {
          const im = images[pos];
          if (!im) return;
          slider.value = String(pos);
          img.src = buildUrl("/api/views/images/image", { run, tag: t.tag, i: im.i });
          img.dataset.step = String(im.step);
          label.textContent = `step ${im.step} · ${im.width}×${im.height}`;
        };
        slider.addEventListener("input", () => show(Number(slider.value)));
        grid.append(
          h("section", { class: "card image-card", "data-tag": t.tag, "data-run": run }, h("div", { class: "card-head" }, h("h3", {}, `${t.tag} · ${run}`)), h("div", { class: "row" }, slider, label), h("div", { class: "image-frame" }, img)),
        );
        show(images.length - 1);
        cards.push({ images, slider, show });
      }
    }
    steps = [...allSteps].sort((a, b) => a - b);
    globalStep.max = String(Math.max(0, steps.length - 1));
    globalStep.value = globalStep.max;
    globalLabel.textContent = steps.length ? String(steps[steps.length - 1]) : "";
    applyLook();
  }

  globalStep.addEventListener("input", () => {
    const step = steps[Number(globalStep.value)] ?? 0;
    globalLabel.textContent = String(step);
    for (const c of cards) c.show(positionAtStep(c.images, step));
  });
  for (const input of [brightness, contrast, actual]) input.addEventListener("input", applyLook);
  actual.addEventListener("change", applyLook);
  void refresh();
  return { refresh: () => void refresh(), dispose: () => undefined };
}
