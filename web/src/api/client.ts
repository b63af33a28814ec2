// Typed fetch for the board API: a non-2xx answer becomes ApiError(code, message).
import type { JsonNumber } from "./types";

export class ApiError extends Error {
  readonly code: string;
  readonly status: number;

  constructor(status: number, code: string, message: string) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
  }
}

export type Params = Record<string, string | number | undefined | null | string[]>;

export function buildUrl(path: string, params: Params = {}): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined || value === null) continue;
    if (Array.isArray(value)) {
      for (const v of value) search.append(key, v);
    } else {
      search.append(key, String(value));
    }
  }
  const query = search.toString();
  return query ? `${path}?${query}` : path;
}

export async function getJson<T>(path: string, params: Params = {}): Promise<T> {
  const response = await fetch(buildUrl(path, params), { headers: { Accept: "application/json" } });
  if (!response.ok) {
    let code = "http_error";
    let message = `${response.status} ${response.statusText}`;
    try {
      const body = (await response.json()) as { error?: { code?: string; message?: string } };
      code = body.error?.code ?? code;
      message = body.error?.message ?? message;
    } catch {
      // not JSON: keep the status line
    }
    throw new ApiError(response.status, code, message);
  }
  return (await response.json()) as T;
}

/** Runs per request for the routes that take many `run` parameters: within every route's
 * limit (`at most N runs per request`) and a URL of a few KiB. */
export const RUN_CHUNK = 64;
/** Runs per `/api/views/scalars/multi` request (its limit): two requests per chart of a
 * 1,000-run sweep, so the first chart's requests are not queued behind the next charts' (a
 * browser opens 6 connections per host). */
export const SERIES_RUN_CHUNK = 500;

/**
 * `getJson` for a route with a repeated `run` parameter: more runs than `size` go in chunks,
 * fetched in parallel, whose answers `merge` folds into one (a sweep of 1,000 runs selected
 * at once must not turn every chart into "at most 500 runs per request").
 */
export async function getJsonByRuns<T>(
  path: string,
  params: Params,
  runs: string[],
  merge: (parts: T[]) => T,
  size: number = RUN_CHUNK,
): Promise<T> {
  if (runs.length <= size) return getJson<T>(path, { ...params, run: runs });
  const parts: Promise<T>[] = [];
  for (let i = 0; i < runs.length; i += size) parts.push(getJson<T>(path, { ...params, run: runs.slice(i, i + size) }));
  return merge(await Promise.all(parts));
}

/** A `merge` for {@link getJsonByRuns}: the answers' `keys` lists concatenated, every other
 * field from the first answer. */
export function concatLists<T extends object>(...keys: (keyof T)[]): (parts: T[]) => T {
  return (parts) => {
    const out = { ...parts[0] } as T;
    for (const key of keys) (out as Record<keyof T, unknown>)[key] = parts.flatMap((p) => p[key] as unknown[]);
    return out;
  };
}

/** The merge of the scalar routes' answers (`{ series: [...] }`). */
export const mergeSeries = <T extends { series: unknown[] }>(parts: T[]): T => concatLists<T>("series")(parts);

/** Decode the API's number encoding ("NaN", "Infinity", "-Infinity" for non-finite values). */
export function toNumber(v: JsonNumber | null): number {
  if (v === null) return Number.NaN;
  if (typeof v === "number") return v;
  if (v === "Infinity") return Number.POSITIVE_INFINITY;
  if (v === "-Infinity") return Number.NEGATIVE_INFINITY;
  return Number.NaN;
}
