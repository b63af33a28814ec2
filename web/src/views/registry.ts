// Built-in view name -> lazy bundled module exporting render(el, ctx). One line per built-in view;
// the tabs come from GET /api/views (BUILTIN_VIEWS in board/views/__init__.py, plus third-party
// views, which ship their own module: core/viewloader.ts). tests/board keeps the names equal.
import type { RenderFn } from "../core/state";

export const VIEWS: Record<string, () => Promise<{ render: RenderFn }>> = {
  scalars: () => import("./scalars/index"),
  histograms: () => import("./histograms/index"),
  images: () => import("./images/index"),
  audio: () => import("./audio/index"),
  text: () => import("./text/index"),
  graphs: () => import("./graphs/index"),
  precision: () => import("./precision/index"),
  tensors: () => import("./tensors/index"),
  data_graphs: () => import("./data_graphs/index"),
  landscapes: () => import("./landscapes/index"),
  comparison: () => import("./comparison/index"),
  hparams: () => import("./hparams/index"),
  pr_curves: () => import("./pr_curves/index"),
  custom_scalars: () => import("./custom_scalars/index"),
  embeddings: () => import("./embeddings/index"),
  mesh: () => import("./mesh/index"),
  monitor: () => import("./monitor/index"),
};
