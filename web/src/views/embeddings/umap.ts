// UMAP (McInnes, Healy and Melville, 2018), for the projector's small samples: exact nearest
// neighbours (O(n²), n <= TSNE_MAX_POINTS), per-point bandwidths by bisection, the fuzzy union
// of the neighbour graphs, and stochastic gradient descent on the low-dimensional layout with
// edges sampled by weight and negative samples, from the paper's equations. Seeded, so a
// layout reproduces; it starts from the points' first principal components.
import { seededRandom } from "./tsne";

export interface UmapOptions {
  /** Output dimensions, 2 or 3. */
  dims: number;
  /** Neighbours of each point in the input graph (clamped below n). */
  neighbors?: number;
  /** Seed of the negative samples and the initial jitter. */
  seed?: number;
  /** Epochs of gradient descent. */
  epochs?: number;
  /** Negative samples per positive one. */
  negatives?: number;
}

/** The output kernel 1 / (1 + a d^(2b)) fitted (least squares on d in (0, 3]) to UMAP's
 * target for min_dist 0.1 and spread 1: 1 below min_dist, exp(-(d - min_dist)) above. */
export const CURVE_A = 1.577;
export const CURVE_B = 0.8951;
const MIN_DIST = 0.1;

/** UMAP's target similarity at output distance ``d`` (min_dist 0.1, spread 1). */
export function targetCurve(d: number): number {
  return d < MIN_DIST ? 1 : Math.exp(-(d - MIN_DIST));
}

/** The fitted kernel at output distance ``d``. */
export function kernel(d: number, a = CURVE_A, b = CURVE_B): number {
  return 1 / (1 + a * d ** (2 * b));
}

export interface Graph {
  /** Edge ends and weights (each undirected edge once, i < j). */
  from: Uint32Array;
  to: Uint32Array;
  weight: Float64Array;
}

/** The k nearest neighbours of each of the ``n`` rows of ``x`` (``d`` values each), by
 * euclidean distance: indices and distances, ``n * k`` flat, nearest first. */
export function nearest(x: Float64Array, n: number, d: number, k: number): { index: Uint32Array; dist: Float64Array } {
  const index = new Uint32Array(n * k);
  const dist = new Float64Array(n * k);
  const row = new Float64Array(n);
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) {
      let s = 0;
      for (let c = 0; c < d; c++) {
        const diff = (x[i * d + c] as number) - (x[j * d + c] as number);
        s += diff * diff;
      }
      row[j] = j === i ? Infinity : Math.sqrt(s);
      order[j] = j;
    }
    order.sort((a, b) => row[a]! - row[b]! || a - b);
    for (let m = 0; m < k; m++) {
      index[i * k + m] = order[m]!;
      dist[i * k + m] = row[order[m]!]!;
    }
  }
  return { index, dist };
}

/** The fuzzy graph: each point's membership strengths exp(-(d - rho) / sigma) to its
 * neighbours, sigma bisected so they sum to log2(k), joined by the fuzzy union
 * w + wᵀ - w ∘ wᵀ. */
export function fuzzyGraph(index: Uint32Array, dist: Float64Array, n: number, k: number): Graph {
  const target = Math.log2(k);
  const directed = new Map<number, number>(); // i * n + j -> w(i -> j)
  for (let i = 0; i < n; i++) {
    let rho = Infinity;
    for (let m = 0; m < k; m++) {
      const v = dist[i * k + m]!;
      if (v > 0 && v < rho) rho = v;
    }
    if (!Number.isFinite(rho)) rho = 0;
    let lo = 0;
    let hi = Infinity;
    let sigma = 1;
    for (let it = 0; it < 64; it++) {
      let sum = 0;
      for (let m = 0; m < k; m++) sum += Math.exp(-Math.max(0, dist[i * k + m]! - rho) / sigma);
      if (Math.abs(sum - target) < 1e-5) break;
      if (sum > target) {
        hi = sigma;
        sigma = (lo + hi) / 2;
      } else {
        lo = sigma;
        sigma = hi === Infinity ? sigma * 2 : (lo + hi) / 2;
      }
    }
    for (let m = 0; m < k; m++) {
      const j = index[i * k + m]!;
      directed.set(i * n + j, Math.exp(-Math.max(0, dist[i * k + m]! - rho) / sigma));
    }
  }
  const from: number[] = [];
  const to: number[] = [];
  const weight: number[] = [];
  for (const [key, w] of directed) {
    const i = Math.floor(key / n);
    const j = key % n;
    const back = directed.get(j * n + i);
    if (back !== undefined && j < i) continue; // the pair is taken once, from its lower end
    const wb = back ?? 0;
    from.push(Math.min(i, j));
    to.push(Math.max(i, j));
    weight.push(w + wb - w * wb);
  }
  return { from: Uint32Array.from(from), to: Uint32Array.from(to), weight: Float64Array.from(weight) };
}

const CLIP = 4;

function clip(v: number): number {
  return v > CLIP ? CLIP : v < -CLIP ? -CLIP : v;
}

/** UMAP on the ``n`` rows of ``x`` (``d`` values each, PCA components: their first ``dims``
 * columns start the layout). :meth:`step` runs one epoch; :meth:`coords` is the layout. */
export class Umap {
  readonly n: number;
  readonly dims: number;
  readonly epochs: number;
  epoch = 0;
  private readonly y: Float64Array;
  private readonly graph: Graph;
  private readonly everyEpochs: Float64Array;
  private readonly nextEpoch: Float64Array;
  private readonly random: () => number;
  private readonly negatives: number;

  constructor(x: Float64Array, n: number, d: number, opts: UmapOptions) {
    this.n = n;
    this.dims = opts.dims;
    this.epochs = opts.epochs ?? 300;
    this.negatives = opts.negatives ?? 5;
    this.random = seededRandom(opts.seed ?? 1);
    const k = Math.max(2, Math.min(opts.neighbors ?? 15, n - 1));
    const { index, dist } = n > 1 ? nearest(x, n, d, k) : { index: new Uint32Array(0), dist: new Float64Array(0) };
    this.graph = n > 1 ? fuzzyGraph(index, dist, n, k) : { from: new Uint32Array(0), to: new Uint32Array(0), weight: new Float64Array(0) };
    // an edge is sampled every max_w / w epochs: strong edges pull most often
    let maxW = 0;
    for (const w of this.graph.weight) maxW = Math.max(maxW, w);
    const edges = this.graph.weight.length;
    this.everyEpochs = new Float64Array(edges);
    this.nextEpoch = new Float64Array(edges);
    for (let e = 0; e < edges; e++) {
      const w = this.graph.weight[e]!;
      this.everyEpochs[e] = w > 0 ? maxW / w : Infinity;
      this.nextEpoch[e] = this.everyEpochs[e]!;
    }
    // start from the principal components, scaled to a box of side 10, a little jittered
    this.y = new Float64Array(n * this.dims);
    for (let c = 0; c < this.dims; c++) {
      let lo = Infinity;
      let hi = -Infinity;
      for (let i = 0; i < n; i++) {
        const v = c < d ? (x[i * d + c] as number) : 0;
        lo = Math.min(lo, v);
        hi = Math.max(hi, v);
      }
      const span = hi > lo ? hi - lo : 1;
      for (let i = 0; i < n; i++) {
        const v = c < d ? (x[i * d + c] as number) : 0;
        this.y[i * this.dims + c] = (10 * (v - lo)) / span + (this.random() - 0.5) * 1e-3;
      }
    }
  }

  /** One epoch of gradient descent; returns the epoch reached. */
  step(): number {
    if (this.epoch >= this.epochs) return this.epoch;
    const { from, to } = this.graph;
    const y = this.y;
    const dims = this.dims;
    const a = CURVE_A;
    const b = CURVE_B;
    const alpha = 1 - this.epoch / this.epochs;
    const epoch = this.epoch + 1;
    for (let e = 0; e < from.length; e++) {
      if (this.nextEpoch[e]! > epoch) continue;
      const i = from[e]!;
      const j = to[e]!;
      let d2 = 0;
      for (let c = 0; c < dims; c++) {
        const diff = y[i * dims + c]! - y[j * dims + c]!;
        d2 += diff * diff;
      }
      // attraction along the edge: the gradient of the cross-entropy's positive term
      const pull = d2 > 0 ? (-2 * a * b * d2 ** (b - 1)) / (1 + a * d2 ** b) : 0;
      for (let c = 0; c < dims; c++) {
        const g = clip(pull * (y[i * dims + c]! - y[j * dims + c]!)) * alpha;
        y[i * dims + c] = y[i * dims + c]! + g;
        y[j * dims + c] = y[j * dims + c]! - g;
      }
      // repulsion from random points: its negative term
      for (let s = 0; s < this.negatives; s++) {
        const m = Math.floor(this.random() * this.n);
        if (m === i) continue;
        let q2 = 0;
        for (let c = 0; c < dims; c++) {
          const diff = y[i * dims + c]! - y[m * dims + c]!;
          q2 += diff * diff;
        }
        const push = (2 * b) / ((0.001 + q2) * (1 + a * q2 ** b));
        for (let c = 0; c < dims; c++) {
          const g = q2 > 0 ? clip(push * (y[i * dims + c]! - y[m * dims + c]!)) : CLIP;
          y[i * dims + c] = y[i * dims + c]! + g * alpha;
        }
      }
      this.nextEpoch[e] = this.nextEpoch[e]! + this.everyEpochs[e]!;
    }
    this.epoch = epoch;
    return epoch;
  }

  /** The layout, one row of ``dims`` values per point. */
  coords(): number[][] {
    const out: number[][] = [];
    for (let i = 0; i < this.n; i++) out.push(Array.from(this.y.subarray(i * this.dims, (i + 1) * this.dims)));
    return out;
  }
}
