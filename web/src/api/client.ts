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

/** Decode the API's number encoding ("NaN", "Infinity", "-Infinity" for non-finite values). */
export function toNumber(v: JsonNumber | null): number {
  if (v === null) return Number.NaN;
  if (typeof v === "number") return v;
  if (v === "Infinity") return Number.POSITIVE_INFINITY;
  if (v === "-Infinity") return Number.NEGATIVE_INFINITY;
  return Number.NaN;
}
