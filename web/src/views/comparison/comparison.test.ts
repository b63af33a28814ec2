import { describe, expect, it } from "vitest";
import { fmtGain, gainSentence, histTicks } from "./detail";
import { badness, badnessColor, chipTint, fmt, fmtMetric, fmtRatio, ratioBadness, verdictTint } from "./scale";
import { headerSummary, nextDiff, shortOp } from "./sides";
import { shortDtype } from "./table";
import { pickLossTag } from "./losses";
import { visibleTree } from "./tree";
import type { ModuleNode, Row } from "./types";

describe("comparison colour scale", () => {
  it("grades errors on a log scale between the best and worst seen", () => {
    expect(badness(1e-6, "max_abs_err", [1e-6, 1], false)).toBe(0);
    expect(badness(1, "max_abs_err", [1e-6, 1], false)).toBe(1);
    expect(badness(1e-3, "max_abs_err", [1e-6, 1], false)).toBeCloseTo(0.5);
    expect(badness("Infinity", "max_abs_err", [0, 1], false)).toBe(1);
  });
  it("grades similarities by their distance from 1", () => {
    expect(badness(0.5, "cosine", [0.5, 1], true)).toBe(1);
    expect(badness(1, "cosine", [0.5, 1], true)).toBe(0);
  });
  it("leaves missing values and one-sided statistics uncoloured", () => {
    expect(badness(null, "cosine", [0, 1], true)).toBeNull();
    expect(badness("NaN", "cosine", [0, 1], true)).toBeNull();
    expect(badness(3, "mean_bench", [0, 5], false)).toBeNull();
    expect(badnessColor(null)).toBe("transparent");
  });
  it("formats numbers compactly, cosines with enough digits", () => {
    expect(fmt(null)).toBe("–");
    expect(fmt("-Infinity")).toBe("-Inf");
    expect(fmt(1.23456e-7)).toBe("1.23e-7");
    expect(fmtMetric("cosine", 0.99999123)).toBe("0.99999123");
  });
});

describe("module tree", () => {
  const leaf = (path: string, verdict: string): ModuleNode => ({
    path, name: path.split(".").pop() ?? "", rows: 1, counts: { [verdict]: 1 }, verdict, value: 1, first_position: 0, children: [],
  });
  it("opens scopes on the way to errors", () => {
    const tree: ModuleNode = {
      ...leaf("", "error"),
      children: [{ ...leaf("M", "error"), children: [leaf("M.a", "pass"), { ...leaf("M.b", "error"), children: [leaf("M.b.x", "error")] }] }],
    };
    const open = visibleTree(tree);
    expect(open.has("M")).toBe(true);
    expect(open.has("M.b")).toBe(true);
    expect(open.has("M.a")).toBe(false);
  });
});

describe("loss curves", () => {
  it("picks the loss tag most selected runs share", () => {
    const runs = [
      { name: "a", tags: { scalars: ["loss/train", "lr", "loss/eval"] } },
      { name: "b", tags: { scalars: ["loss/train"] } },
      { name: "c", tags: { scalars: ["val_loss"] } },
      { name: "h1", tags: { scalars: ["hparam/final_loss"] } },
      { name: "h2", tags: { scalars: ["hparam/final_loss"] } },
      { name: "h3", tags: { scalars: ["hparam/final_loss"] } },
    ];
    expect(pickLossTag(runs, new Set(["a", "b", "c", "h1", "h2", "h3"]))).toBe("loss/train");
    expect(pickLossTag(runs, new Set(["c"]))).toBe("val_loss");
    expect(pickLossTag(runs, new Set(["z"]))).toBeNull();
  });
});

describe("colours follow the verdict", () => {
  it("never colours a passing row, however bad its metric looks in this comparison", () => {
    expect(verdictTint("pass", 1)).toBe("transparent");
    expect(verdictTint("pass", 0.5)).toBe("transparent");
    expect(verdictTint("error", 0)).toBe("transparent");
    expect(verdictTint("error", null)).toBe("transparent");
  });
  it("shades warnings amber and errors red, errors stronger", () => {
    const light = (c: string): number => Number(/(\d+)%\)$/.exec(c)?.[1]);
    expect(verdictTint("warning", 1)).toMatch(/^hsl\(40 /);
    expect(verdictTint("error", 1)).toMatch(/^hsl\(0 /);
    expect(light(verdictTint("error", 1))).toBeLessThan(light(verdictTint("warning", 1)));
    expect(light(verdictTint("error", 1))).toBeLessThan(light(verdictTint("error", 0.3)));
  });
  it("grades error/budget on an absolute scale", () => {
    expect(ratioBadness(0.5)).toBe(0);
    expect(ratioBadness(1)).toBe(0);
    expect(ratioBadness(1000)).toBe(1);
    expect(ratioBadness(1e9)).toBe(1);
    expect(ratioBadness("Infinity")).toBe(1);
    expect(ratioBadness(10)).toBeCloseTo(1 / 3);
    expect(ratioBadness(1.01)).toBe(0.2);
    expect(ratioBadness(null)).toBeNull();
    expect(ratioBadness("NaN")).toBeNull();
    expect(fmtRatio("Infinity")).toBe("∞");
    expect(fmtRatio(0.0234)).toBe("0.0234");
  });
  it("keeps passing scopes pale green in the metric-coloured tree", () => {
    expect(chipTint("pass", 1)).toBe("#d9efdf");
    expect(chipTint("error", 0)).not.toBe("#d9efdf");
    expect(chipTint("warning", null)).toBe("#ddd");
  });
});

describe("side-by-side traces", () => {
  it("summarises a header", () => {
    expect(headerSummary({ ops: 12, counts: { target: 3, bench: 0, partial: 0, matched: 9 } })).toBe("12 ops · 3 only in target");
    expect(headerSummary({ ops: 1, counts: { matched: 1 } })).toBe("1 op · all matched");
    expect(headerSummary({ ops: 4, counts: { bench: 1, target: 2, partial: 1 } })).toBe("4 ops · 1 only in bench · 2 only in target · 1 partly paired");
  });
  it("steps through differences", () => {
    const d = [3, 8, 20];
    expect(nextDiff(d, -1, 1)).toBe(3);
    expect(nextDiff(d, 3, 1)).toBe(8);
    expect(nextDiff(d, 20, 1)).toBeNull();
    expect(nextDiff(d, 20, -1)).toBe(8);
    expect(nextDiff(d, 3, -1)).toBeNull();
    expect(nextDiff([], 0, 1)).toBeNull();
  });
  it("shortens ATen op names, keeps others", () => {
    expect(shortOp("aten.native_layer_norm.default")).toBe("native_layer_norm");
    expect(shortOp("aten.add.Tensor")).toBe("add.Tensor");
    expect(shortOp("Functional.linear.0.forward")).toBe("Functional.linear.0.forward");
  });
  it("abbreviates dtypes in the table", () => {
    expect(shortDtype("bfloat16")).toBe("bf16");
    expect(shortDtype("float32")).toBe("f32");
    expect(shortDtype("complex64")).toBe("complex64");
    expect(shortDtype(null)).toBe("–");
  });
});

describe("drill-down", () => {
  const row = (over: Partial<Row>): Row => ({
    position: 1, index: 1, op: "aten.addmm.default", module_path: "M", direction: "forward", tensor: "output.0",
    shape_bench: [2], shape_target: [2], dtype_bench: "float32", dtype_target: "float32", verdict: "pass", reason: "",
    match: "name", mode: "tensor", error: 0.01, input_error: 0.005, error_gain: 2, budget: 0.1, budget_ratio: 0.1, mechanism: null,
    ...over,
  });
  it("explains the error gain of outputs", () => {
    expect(gainSentence(row({}), [])).toContain("error gain 2×");
    expect(gainSentence(row({}), [])).toContain("adds error");
    expect(gainSentence(row({ error_gain: 0.5 }), [])).toContain("passes on");
    expect(gainSentence(row({ input_error: 0, error_gain: "Infinity" }), [])).toContain("inputs agree exactly");
    expect(gainSentence(row({ error: 0, input_error: 0, error_gain: 1 }), [])).toContain("agrees exactly");
  });
  it("says what an input's error means instead of 'error gain –'", () => {
    const out = row({ position: 2, error_gain: 1.025 });
    const s = gainSentence(row({ tensor: "input.0", error_gain: null, input_error: null, budget: 2.38e-7 }), [out]);
    expect(s).toContain("input of this op");
    expect(s).toContain("defined for outputs only");
    expect(s).toContain("output.0: gain 1.025×");
    expect(s).toContain("2.38e-7");
    expect(s).not.toContain("gain –");
    expect(gainSentence(row({ tensor: "grad.weight", error_gain: null }), [])).toContain("accumulated gradient");
    expect(gainSentence(row({ match: "unmatched" }), [])).toContain("no counterpart");
    expect(fmtGain(null)).toBe("–");
    expect(fmtGain("Infinity")).toBe("∞");
  });
  it("keeps histogram ticks inside the axis, thinned when the range is wide", () => {
    const t = histTicks(-6.3, -2, 478);
    expect(t.map((x) => x.exp)).toEqual([-6, -5, -4, -3, -2]);
    expect(Math.max(...t.map((x) => x.x))).toBeLessThanOrEqual(478);
    const wide = histTicks(-40, 0, 478);
    expect(wide.length).toBeLessThanOrEqual(10);
    expect(wide[0]?.exp).toBe(-40);
    expect(histTicks(1, 1, 100)).toEqual([]);
  });
});
