/**
 * Debiased exponential moving average, as TensorBoard and MindInsight smooth scalars.
 * `weight` in [0, 1): 0 returns the values unchanged. Non-finite values are passed through
 * and do not disturb the average; the bias from starting at 0 is divided out.
 */
export function smoothEma(values: readonly number[], weight: number): number[] {
  if (!(weight > 0)) return values.slice();
  const w = Math.min(weight, 0.999);
  const out: number[] = new Array<number>(values.length);
  let last = 0;
  let n = 0;
  let allEqual = true;
  for (let i = 1; i < values.length && allEqual; i++) allEqual = values[i] === values[0];
  for (let i = 0; i < values.length; i++) {
    const v = values[i] as number;
    if (!Number.isFinite(v) || allEqual) {
      out[i] = v;
      continue;
    }
    last = last * w + (1 - w) * v;
    n += 1;
    out[i] = last / (1 - Math.pow(w, n));
  }
  return out;
}
