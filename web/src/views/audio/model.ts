// Audio view model: the clips of a run at a chosen step, and display text for one clip.

export interface ClipEntry {
  i: number;
  step: number;
  wall_time: number;
  index: number;
  sample_rate: number;
  duration: number | null;
  channels: number;
  mime_type: string;
  label: string;
  bytes: number;
}

export interface RunClips {
  run: string;
  steps: number[];
  clips: ClipEntry[];
}

export interface ClipsResponse {
  tag: string;
  runs: RunClips[];
  missing: string[];
}

/** Steps of every run, ascending, without repeats. */
export function unionSteps(runs: { steps: number[] }[]): number[] {
  const all = new Set<number>();
  for (const r of runs) for (const s of r.steps) all.add(s);
  return [...all].sort((a, b) => a - b);
}

/** The clips at the newest step at or before `step` (null: the last step); the first step's
 * clips when none is that early. Several clips of one step come in index order. */
export function clipsAtStep(clips: ClipEntry[], step: number | null): ClipEntry[] {
  if (!clips.length) return [];
  const last = clips[clips.length - 1] as ClipEntry;
  let chosen = (clips[0] as ClipEntry).step;
  if (step === null) chosen = last.step;
  else for (const c of clips) if (c.step <= step && c.step > chosen) chosen = c.step;
  return clips.filter((c) => c.step === chosen).sort((a, b) => a.index - b.index);
}

function hz(rate: number): string {
  if (!rate) return "rate unknown";
  return rate >= 1000 ? `${(rate / 1000).toFixed(rate % 1000 ? 1 : 0)} kHz` : `${rate} Hz`;
}

/** "step 20 · 16 kHz · 1.50 s · mono · 47 KB" and the label when there is one. */
export function clipText(c: ClipEntry): string {
  const parts = [`step ${c.step}`, hz(c.sample_rate)];
  parts.push(c.duration === null ? "duration unknown" : `${c.duration.toFixed(2)} s`);
  if (c.channels) parts.push(c.channels === 1 ? "mono" : c.channels === 2 ? "stereo" : `${c.channels} ch`);
  parts.push(c.bytes >= 1024 * 1024 ? `${(c.bytes / 1024 / 1024).toFixed(1)} MB` : `${Math.max(1, Math.round(c.bytes / 1024))} KB`);
  if (c.label) parts.push(c.label);
  return parts.join(" · ");
}
