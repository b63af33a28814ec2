// Response shapes of /api/views/comparison/*; docs/http_api/comparison.md is the spec.
import type { JsonNumber } from "../../api/types";

export type Num = JsonNumber | null;

export interface AdviceInfo {
  mechanism: string;
  evidence: string;
  row: number | null;
}

export interface ComparisonInfo {
  name: string;
  bench: string;
  target: string;
  profile: string;
  metrics: string[];
  higher_is_better: string[];
  ranks: number[];
  step: number | null;
  row_count: number;
  counts: Record<string, number>;
  first_divergence: number | null;
  advice: AdviceInfo[];
  mtime: number;
  error: string | null;
}

export interface Row {
  position: number;
  index: number | null;
  op: string;
  module_path: string;
  direction: string;
  tensor: string;
  shape_bench: number[] | null;
  shape_target: number[] | null;
  dtype_bench: string | null;
  dtype_target: string | null;
  verdict: string;
  reason: string;
  match: string;
  mode: string;
  error: Num;
  input_error: Num;
  error_gain: Num;
  mechanism: string | null;
  [column: string]: unknown;
}

export interface SummaryResponse {
  comparison: ComparisonInfo;
  first_divergence_row: Row | null;
  metric_ranges: Record<string, [number, number] | null>;
  ops: string[];
}

export interface RowPage {
  total: number;
  matched: number;
  offset: number;
  rows: Row[];
}

export interface ModuleNode {
  path: string;
  name: string;
  rows: number;
  counts: Record<string, number>;
  verdict: string;
  value: Num;
  first_position: number;
  children: ModuleNode[];
}

export interface TensorSummary {
  shape: number[];
  dtype: string;
  count: number;
  min: Num;
  max: Num;
  mean: Num;
  std: Num;
  norm: Num;
  zeros: number;
  nan: number;
  pos_inf: number;
  neg_inf: number;
}

export interface OpDetail {
  position: number;
  row: Row;
  bench: TensorSummary | null;
  target: TensorSummary | null;
  histogram: { edges: number[]; counts: number[]; zero: number; nonfinite: number } | null;
  heatmap: {
    slice_index: number[];
    lead_shape: number[];
    rows: number;
    cols: number;
    block: [number, number];
    values: JsonNumber[][];
  } | null;
  worst: { index: number[]; bench: JsonNumber; target: JsonNumber; abs_err: JsonNumber; rel_err: JsonNumber }[];
  op_rows: Row[];
  advice: AdviceInfo[];
  note: string | null;
}

export interface ReplayInfo {
  op: string;
  tensor: string;
  dtype: string;
  replay_vs_float64: JsonNumber;
  target_vs_float64: JsonNumber;
  bench_vs_float64: JsonNumber;
  target_vs_replay: JsonNumber;
  op_explains_error: boolean;
}
