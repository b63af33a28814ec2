import { describe, expect, it } from "vitest";
import type { HParamsRow, HParamsTable } from "../../api/types";
import { cell, columns, filterRows, parseBound, passes, sortRows } from "./model";
import { axisScale } from "./parallel";

const row = (run: string, lr: number, opt: string, loss: number | "NaN" | null): HParamsRow => ({
  run,
  wall_time: 0,
  hparams: { lr, opt },
  metrics: { "hparam/loss": loss === null ? null : { value: loss, step: 9, wall_time: 0 } },
});
const rows = [row("a", 0.1, "sgd", 0.5), row("b", 0.01, "adam", 0.2), row("c", 0.3, "adam", "NaN"), row("d", 0.2, "sgd", null)];
const table: HParamsTable = {
  hparams: [
    { name: "lr", type: "number", values: [0.01, 0.1, 0.2, 0.3] },
    { name: "opt", type: "string", values: ["adam", "sgd"] },
  ],
  metrics: [{ tag: "hparam/loss", declared: true }],
  runs: rows,
};

describe("hparams model", () => {
  it("lists hparam then metric columns and reads cells", () => {
    expect(columns(table).map((c) => c.key)).toEqual(["hp:lr", "hp:opt", "m:hparam/loss"]);
    expect(cell(rows[0] as HParamsRow, "m:hparam/loss")).toBe(0.5);
    expect(Number.isNaN(cell(rows[2] as HParamsRow, "m:hparam/loss"))).toBe(true);
    expect(cell(rows[3] as HParamsRow, "m:hparam/loss")).toBeNull();
  });
  it("sorts both ways with missing and NaN cells last", () => {
    expect(sortRows(rows, "m:hparam/loss", 1).map((r) => r.run)).toEqual(["b", "a", "c", "d"]);
    expect(sortRows(rows, "m:hparam/loss", -1).map((r) => r.run)).toEqual(["a", "b", "c", "d"]);
    expect(sortRows(rows, "hp:opt", 1).map((r) => r.run)).toEqual(["b", "c", "a", "d"]);
  });
  it("filters by ranges and text, together", () => {
    expect(filterRows(rows, new Map([["hp:lr", { min: 0.1, max: 0.2 }]])).map((r) => r.run)).toEqual(["a", "d"]);
    const both = new Map([["hp:lr", { min: 0.05 }], ["hp:opt", { text: "ADA" }]]);
    expect(filterRows(rows, both).map((r) => r.run)).toEqual(["c"]);
    // a range leaves out rows without a number there
    expect(filterRows(rows, new Map([["m:hparam/loss", { max: 1 }]])).map((r) => r.run)).toEqual(["a", "b"]);
    expect(passes(null, undefined)).toBe(true);
  });
  it("parses bounds and rejects junk", () => {
    expect(parseBound(" 0.5 ")).toBe(0.5);
    expect(parseBound("")).toBeUndefined();
    expect(parseBound("abc")).toBeUndefined();
  });
  it("scales axes: numbers over their range, categories evenly", () => {
    const [lr, opt, loss] = columns(table);
    const s = axisScale(lr!, rows);
    expect(s(0.01)).toBe(0);
    expect(s(0.3)).toBe(1);
    expect(axisScale(opt!, rows)("sgd")).toBe(1);
    expect(axisScale(loss!, rows)(null)).toBeNull();
  });
});
