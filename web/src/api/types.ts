// Response shapes of the board's JSON API; docs/http_api/*.md is the spec.

export type JsonNumber = number | "NaN" | "Infinity" | "-Infinity";

export interface ViewEntry {
  name: string;
  title: string;
  enabled: boolean;
  has_data: boolean;
  reason: string;
  /** URL of a third-party view's front-end ES module; null: bundled (views/registry.ts). */
  module: string | null;
}

export interface RunEntry {
  name: string;
  first_wall_time: number | null;
  last_wall_time: number | null;
  tag_count: number;
  tags: Record<string, string[]>;
  active: boolean;
  dropped: Record<string, number>;
}

export interface RunsResponse {
  generation: number;
  /** True while the server reads the logdir for the first time (absent: false). */
  loading?: boolean;
  now: number;
  limits: Record<string, number | null>;
  runs: RunEntry[];
}

export interface TagEntry {
  tag: string;
  runs: string[];
}

export type XAxis = "step" | "relative" | "wall_time";

export interface ScalarSeriesResponse {
  run: string;
  tag: string;
  x_axis: XAxis;
  total_points: number;
  returned_points: number;
  nonfinite_points: number;
  downsampled: boolean;
  first_wall_time: number;
  x_extent: [number, number] | null;
  /** Present unless left out with `fields`. */
  step?: number[];
  wall_time?: number[];
  value: JsonNumber[];
}

export interface HistogramRecordJson {
  step: number;
  wall_time: number;
  edges: JsonNumber[];
  counts: JsonNumber[];
  min: JsonNumber | null;
  max: JsonNumber | null;
  num: JsonNumber | null;
  sum: JsonNumber | null;
  nan_count: number | null;
  pos_inf_count: number | null;
  neg_inf_count: number | null;
}

export interface HistogramSeriesResponse {
  run: string;
  tag: string;
  total_records: number;
  records: HistogramRecordJson[];
}

export interface ImageEntry {
  i: number;
  step: number;
  wall_time: number;
  index: number;
  width: number;
  height: number;
  mime_type: string;
}

export interface ImageListResponse {
  run: string;
  tag: string;
  images: ImageEntry[];
}

export interface TextSeriesResponse {
  run: string;
  tag: string;
  records: { step: number; wall_time: number; text: string }[];
}

/** GET /api/views/hparams/table (docs/http_api/hparams.md). */
export type HParamValue = boolean | number | string;

export interface HParamColumn {
  name: string;
  type: "number" | "string" | "bool";
  values: HParamValue[];
}

export interface MetricCell {
  value: JsonNumber;
  step: number;
  wall_time: number;
}

export interface HParamsRow {
  run: string;
  wall_time: number;
  hparams: Record<string, HParamValue>;
  metrics: Record<string, MetricCell | null>;
}

export interface HParamsTable {
  hparams: HParamColumn[];
  metrics: { tag: string; declared: boolean }[];
  runs: HParamsRow[];
}
