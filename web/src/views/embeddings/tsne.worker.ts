// The projector's t-SNE and UMAP, off the page's thread: gets the points (their PCA
// components), posts the layout every few iterations (epochs for UMAP; the view draws it as
// it settles) and when done.
import { flatten, Tsne } from "./tsne";
import { Umap } from "./umap";

export interface TsneRequest {
  coords: number[][];
  dims: number;
  iterations: number;
  perplexity: number;
  seed: number;
  /** The layout's method (default t-SNE); UMAP reads ``iterations`` as epochs. */
  method?: "tsne" | "umap";
}

export interface TsneProgress {
  iteration: number;
  iterations: number;
  coords: number[][];
  cost: number;
  done: boolean;
}

const POST_EVERY = 10;

self.onmessage = (e: MessageEvent<TsneRequest>) => {
  const { coords, dims, iterations, perplexity, seed, method } = e.data;
  const { x, n, d } = flatten(coords);
  if (method === "umap") {
    const umap = new Umap(x, n, d, { dims, seed, epochs: iterations });
    while (umap.epoch < iterations) {
      const at = umap.step();
      if (at % POST_EVERY === 0 || at === iterations) {
        const msg: TsneProgress = { iteration: at, iterations, coords: umap.coords(), cost: 0, done: at === iterations };
        (self as unknown as Worker).postMessage(msg);
      }
    }
    return;
  }
  const tsne = new Tsne(x, n, d, { dims, perplexity, seed });
  let cost = 0;
  while (tsne.iteration < iterations) {
    cost = tsne.step();
    if (tsne.iteration % POST_EVERY === 0 || tsne.iteration === iterations) {
      const msg: TsneProgress = { iteration: tsne.iteration, iterations, coords: tsne.coords(), cost, done: tsne.iteration === iterations };
      (self as unknown as Worker).postMessage(msg);
    }
  }
};
