import { describe, expect, it } from "vitest";
import { columnOf, columnSteps, describeFinding, firstAcrossRanks, isRankRun, kindColor, nearestMarker, visibleRows, type Heatmap } from "./model";

const heat: Heatmap = {
  run: "r",
  kinds: ["nan", "overflow", "inf", "underflow", "dead", "spike"],
  modules: ["", "fc1", "fc2", "(loss)"],
  first_step: 10,
  last_step: 29,
  bin: 4,
  columns: 5,
  checked_steps: 20,
  cells: [
    { row: 1, col: 2, count: 1, step: 19, kind: "spike", source: "activation", where: "fc1", tensor: "output.0", dtype: "float32", stat: "amax", value: 40 },
    { row: 2, col: 3, count: 2, step: 22, kind: "nan", source: "grad", where: "fc2.weight", tensor: "grad", dtype: "float16", stat: "norm", value: "NaN" },
  ],
  markers: [],
  loss: null,
};

describe("monitor model", () => {
  it("maps steps to bins and back", () => {
    expect(columnOf(heat, 10)).toBe(0);
    expect(columnOf(heat, 22)).toBe(3);
    expect(columnSteps(heat, 3)).toEqual([22, 25]);
    expect(columnSteps(heat, 4)).toEqual([26, 29]);
  });

  it("keeps only flagged rows of shown kinds", () => {
    expect(visibleRows(heat, false, new Set())).toEqual([0, 1, 2, 3]);
    expect(visibleRows(heat, true, new Set())).toEqual([1, 2]);
    expect(visibleRows(heat, true, new Set(["nan"]))).toEqual([1]);
  });

  it("describes a finding and colours it by kind", () => {
    expect(describeFinding(heat.cells[1]!)).toBe("nan in grad 'fc2.weight' grad (float16, norm NaN)");
    expect(describeFinding(heat.cells[0]!)).toBe("spike in activation output.0 (float32, amax 40)");
    expect(kindColor("nan")).not.toBe(kindColor("spike"));
  });

  it("finds the marker nearest the pointer", () => {
    const markers = [5, 9, 30].map((step) => ({ step, count: 1, worst: "nan", loss: 1, dump: null }));
    const xOf = (s: number): number => s * 10;
    expect(nearestMarker(markers, 88, xOf)?.step).toBe(9);
    expect(nearestMarker(markers, 200, xOf)).toBeNull();
  });
});

describe("ranks", () => {
  it("recognises rank runs and names the first rank that went bad", () => {
    expect(isRankRun("exp/rank3")).toBe(true);
    expect(isRankRun("rank0")).toBe(true);
    expect(isRankRun("exp/rank3/extra")).toBe(false);
    expect(isRankRun("frank1")).toBe(false);
    const f = { step: 4, kind: "nan", source: "activation", where: "fc", tensor: "output.0", dtype: "float32", stat: "amax", value: "NaN" as const, module: "fc" };
    const base = { run: "j/rank0", group: "j", kinds: [], first_step: 0, last_step: 6, bin: 1, columns: 7, cells: [] };
    const rows = [
      { rank: 0, run: "j/rank0", findings: 0, first: null, dump: null },
      { rank: 1, run: "j/rank1", findings: 3, first: f, dump: null },
    ];
    expect(firstAcrossRanks({ ...base, ranks: rows, first: { ...f, rank: 1, run: "j/rank1" } })).toBe(
      "2 ranks of j, 1 with findings; first: rank 1 at step 4, nan in fc (activation output.0).",
    );
    expect(firstAcrossRanks({ ...base, ranks: rows.slice(0, 1), first: null })).toBe("1 rank of j: no findings on any rank.");
  });
});
