import { describe, expect, it } from "vitest";
import { clipText, clipsAtStep, unionSteps, type ClipEntry } from "./model";

const clip = (i: number, step: number, index = 0, extra: Partial<ClipEntry> = {}): ClipEntry => ({
  i,
  step,
  wall_time: 0,
  index,
  sample_rate: 16000,
  duration: 1.5,
  channels: 1,
  mime_type: "audio/wav",
  label: "",
  bytes: 48044,
  ...extra,
});

describe("audio model", () => {
  it("unions steps in order", () => {
    expect(unionSteps([{ steps: [20, 0] }, { steps: [0, 10] }])).toEqual([0, 10, 20]);
  });
  it("picks the clips at the newest step at or before the chosen one", () => {
    const clips = [clip(0, 0), clip(1, 10, 1), clip(2, 10, 0), clip(3, 20)];
    expect(clipsAtStep(clips, null).map((c) => c.i)).toEqual([3]);
    expect(clipsAtStep(clips, 15).map((c) => c.i)).toEqual([2, 1]);
    expect(clipsAtStep(clips, -1).map((c) => c.i)).toEqual([0]);
    expect(clipsAtStep([], 3)).toEqual([]);
  });
  it("describes a clip", () => {
    expect(clipText(clip(0, 20))).toBe("step 20 · 16 kHz · 1.50 s · mono · 47 KB");
    expect(clipText(clip(0, 1, 0, { sample_rate: 22050, duration: null, channels: 2, label: "a *cat*", bytes: 3 * 1024 * 1024 }))).toBe(
      "step 1 · 22.1 kHz · duration unknown · stereo · 3.0 MB · a *cat*",
    );
    expect(clipText(clip(0, 1, 0, { sample_rate: 0, channels: 0, bytes: 10 }))).toBe("step 1 · rate unknown · 1.50 s · 1 KB");
    expect(clipText(clip(0, 1, 0, { sample_rate: 800, channels: 6 }))).toContain("800 Hz · 1.50 s · 6 ch");
  });
});
