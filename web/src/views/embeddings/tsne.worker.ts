// The projector's t-SNE, off the page's thread: gets the points (their PCA components), posts
// the layout every few iterations (the view draws it as it settles) and when done.
import { flatten, Tsne } from "./tsne";

export interface TsneRequest {
  coords: number[][];
  dims: number;
  iterations: number;
  perplexity: number;
  seed: number;
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
  const { coords, dims, iterations, perplexity, seed } = e.data;
  const { x, n, d } = flatten(coords);
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
