// t-SNE (van der Maaten and Hinton, 2008), exact: O(n²) per iteration, so the projector runs it
// on at most TSNE_MAX_POINTS points, in a Web Worker (tsne.worker.ts) that reports progress.
// Written from the paper's equations: Gaussian input affinities with a per-point bandwidth found
// by bisection to match the perplexity, a Student-t kernel in the output, gradient descent with
// momentum, per-parameter gains and early exaggeration. Seeded, so a layout reproduces.

/** The most points the projector runs t-SNE on (sampled past that; the view says so). */
export const TSNE_MAX_POINTS = 1000;
/** Input dimensions: the points' first PCA components (the server computes them). */
export const TSNE_INPUT_DIMS = 50;

export interface TsneOptions {
  /** Output dimensions, 2 or 3. */
  dims: number;
  /** Effective number of neighbours (clamped below n / 3). */
  perplexity?: number;
  /** Seed of the initial layout. */
  seed?: number;
  learningRate?: number;
}

/** A small seeded generator (mulberry32): the same seed gives the same layout. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Squared euclidean distances between the rows of `x` (n rows of d values), n x n flat. */
export function squaredDistances(x: Float64Array, n: number, d: number): Float64Array {
  const out = new Float64Array(n * n);
  for (let i = 0; i < n; i++) {
    for (let j = i + 1; j < n; j++) {
      let s = 0;
      for (let k = 0; k < d; k++) {
        const diff = (x[i * d + k] as number) - (x[j * d + k] as number);
        s += diff * diff;
      }
      out[i * n + j] = s;
      out[j * n + i] = s;
    }
  }
  return out;
}

/**
 * The symmetric input affinities P (n x n flat, summing to 1): for each point a Gaussian over
 * the others whose bandwidth is bisected until the row's perplexity (2 to the entropy) is
 * `perplexity`, then P = (P_row + P_rowᵀ) / 2n.
 */
export function affinities(dist2: Float64Array, n: number, perplexity: number): Float64Array {
  const p = new Float64Array(n * n);
  const target = Math.log(Math.max(1.01, Math.min(perplexity, (n - 1) / 3 || 1)));
  const row = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    let beta = 1;
    let lo = -Infinity;
    let hi = Infinity;
    // scale-free start: the row's distances divided by their mean
    let mean = 0;
    for (let j = 0; j < n; j++) if (j !== i) mean += dist2[i * n + j] as number;
    mean = mean / Math.max(1, n - 1) || 1;
    for (let iter = 0; iter < 64; iter++) {
      let sum = 0;
      for (let j = 0; j < n; j++) {
        const v = j === i ? 0 : Math.exp((-(dist2[i * n + j] as number) / mean) * beta);
        row[j] = v;
        sum += v;
      }
      if (sum === 0) sum = 1e-300;
      let entropy = 0; // H = log(sum) + beta * E[d] (natural log)
      for (let j = 0; j < n; j++) entropy += ((row[j] as number) / sum) * ((dist2[i * n + j] as number) / mean);
      entropy = Math.log(sum) + beta * entropy;
      for (let j = 0; j < n; j++) row[j] = (row[j] as number) / sum;
      const gap = entropy - target;
      if (Math.abs(gap) < 1e-5) break;
      if (gap > 0) {
        lo = beta; // too flat: a narrower Gaussian
        beta = hi === Infinity ? beta * 2 : (beta + hi) / 2;
      } else {
        hi = beta;
        beta = lo === -Infinity ? beta / 2 : (beta + lo) / 2;
      }
    }
    for (let j = 0; j < n; j++) p[i * n + j] = row[j] as number;
  }
  for (let i = 0; i < n; i++) {
    for (let j = i + 1; j < n; j++) {
      const v = Math.max(((p[i * n + j] as number) + (p[j * n + i] as number)) / (2 * n), 1e-12);
      p[i * n + j] = v;
      p[j * n + i] = v;
    }
    p[i * n + i] = 0;
  }
  return p;
}

/** One t-SNE optimisation: construct it, call `step()` until `iteration` reaches the wanted
 * count; `coords()` gives the current layout (one row of `dims` values per point). */
export class Tsne {
  readonly n: number;
  readonly dims: number;
  iteration = 0;
  private readonly p: Float64Array;
  private readonly y: Float64Array;
  private readonly update: Float64Array;
  private readonly gains: Float64Array;
  private readonly grad: Float64Array;
  private readonly q: Float64Array;
  private readonly rate: number;

  constructor(x: Float64Array, n: number, d: number, opts: TsneOptions) {
    this.n = n;
    this.dims = opts.dims;
    this.rate = opts.learningRate ?? Math.max(50, n / 12);
    this.p = affinities(squaredDistances(x, n, d), n, opts.perplexity ?? 30);
    const rand = seededRandom(opts.seed ?? 1);
    this.y = new Float64Array(n * this.dims);
    for (let i = 0; i < this.y.length; i++) {
      // a small Gaussian (Box-Muller) around the origin
      const u = Math.max(rand(), 1e-12);
      this.y[i] = 1e-4 * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rand());
    }
    this.update = new Float64Array(n * this.dims);
    this.gains = new Float64Array(n * this.dims).fill(1);
    this.grad = new Float64Array(n * this.dims);
    this.q = new Float64Array(n * n);
  }

  /** One gradient step; returns the Kullback-Leibler cost KL(P || Q) of the layout before it. */
  step(): number {
    const { n, dims, p, y, q, grad } = this;
    const exaggeration = this.iteration < 100 ? 4 : 1;
    const momentum = this.iteration < 250 ? 0.5 : 0.8;
    let sumQ = 0;
    for (let i = 0; i < n; i++) {
      for (let j = i + 1; j < n; j++) {
        let s = 0;
        for (let k = 0; k < dims; k++) {
          const diff = (y[i * dims + k] as number) - (y[j * dims + k] as number);
          s += diff * diff;
        }
        const v = 1 / (1 + s);
        q[i * n + j] = v;
        q[j * n + i] = v;
        sumQ += 2 * v;
      }
    }
    grad.fill(0);
    let cost = 0;
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < n; j++) {
        if (i === j) continue;
        const num = q[i * n + j] as number;
        const pij = p[i * n + j] as number;
        const qij = Math.max(num / sumQ, 1e-12);
        if (j > i) cost += 2 * pij * Math.log(pij / qij);
        const mult = 4 * (exaggeration * pij - qij) * num;
        for (let k = 0; k < dims; k++) {
          grad[i * dims + k] = (grad[i * dims + k] as number) + mult * ((y[i * dims + k] as number) - (y[j * dims + k] as number));
        }
      }
    }
    const { update, gains } = this;
    for (let i = 0; i < y.length; i++) {
      const g = grad[i] as number;
      const u = update[i] as number;
      const gain = Math.sign(g) === Math.sign(u) ? (gains[i] as number) * 0.8 : (gains[i] as number) + 0.2;
      gains[i] = Math.max(gain, 0.01);
      update[i] = momentum * u - this.rate * (gains[i] as number) * g;
      y[i] = (y[i] as number) + (update[i] as number);
    }
    // keep the layout centred
    for (let k = 0; k < dims; k++) {
      let mean = 0;
      for (let i = 0; i < n; i++) mean += y[i * dims + k] as number;
      mean /= n;
      for (let i = 0; i < n; i++) y[i * dims + k] = (y[i * dims + k] as number) - mean;
    }
    this.iteration++;
    return cost;
  }

  coords(): number[][] {
    const out: number[][] = [];
    for (let i = 0; i < this.n; i++) out.push(Array.from(this.y.subarray(i * this.dims, (i + 1) * this.dims)));
    return out;
  }
}

/** Rows of `coords` as one flat array (n x d) for {@link Tsne}. */
export function flatten(coords: number[][]): { x: Float64Array; n: number; d: number } {
  const n = coords.length;
  const d = coords[0]?.length ?? 0;
  const x = new Float64Array(n * d);
  coords.forEach((row, i) => row.forEach((v, k) => (x[i * d + k] = Number.isFinite(v) ? v : 0)));
  return { x, n, d };
}
