import { describe, expect, it } from "vitest";
import { badness, badnessColor, fmt, fmtMetric } from "./scale";
import { pickLossTag } from "./losses";
import { visibleTree } from "./tree";
import type { ModuleNode } from "./types";

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
