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
  /** Why an input dump was incomplete (compared with --allow-incomplete), else null. */
  incomplete?: string | null;
  /** Why the runs cannot be said to agree (too few tensors paired), else null. */
  not_comparable?: string | null;
}

export interface Row {
  position: number;
  index: number | null;
  /** Present on one side only by design (cast, detach, allocation): neutral. */
  one_sided?: boolean;
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
  budget: Num;
  budget_ratio: Num;
  mechanism: string | null;
  [column: string]: unknown;
}

export interface Upstream {
  count: number;
  position: number | null;
  op: string;
  module_path: string;
  side: string;
}

export interface SummaryResponse {
  comparison: ComparisonInfo;
  first_divergence_row: Row | null;
  upstream: Upstream | null;
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

export interface SideOp {
  index: number | null;
  op: string;
  dtype: string | null;
  shape: number[] | null;
  tensors: number;
}

export interface TraceLine {
  line: number;
  id: number;
  kind: "direction" | "scope" | "op";
  depth: number;
  label: string;
  path: string;
  direction: string;
  status: string; // op: matched | bench | target | partial; header: same | differs
  side: "both" | "bench" | "target";
  verdict: string;
  position: number;
  rows: number;
  ops: number;
  counts: Record<string, number>;
  folded: boolean;
  bench: SideOp | null;
  target: SideOp | null;
  match: string;
  moved: boolean;
  reason: string;
}

export interface TracePage {
  total: number;
  offset: number;
  lines: TraceLine[];
  focus: number | null;
  toggles: number[];
  diffs: number[];
  diffs_truncated: boolean;
  counts: Record<string, number>;
}
