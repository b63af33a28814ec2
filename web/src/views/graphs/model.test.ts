import { describe, expect, it } from "vitest";
import { describeOutput, type GraphJson, Hierarchy } from "./model";

function graph(): GraphJson {
  const paths = ["input/input.0", "l.0/fc/aten::addmm_0", "l.0/aten::relu_0", "l.1/fc/aten::addmm_1", "l.1/aten::relu_1", "Gradients/l.0/grad_0", "output/output.0"];
  const ops = ["IO Node", "aten::addmm", "aten::relu", "aten::addmm", "aten::relu", "ReluGrad", "IO Node"];
  return {
    run: "r",
    tag: "g",
    source: "tensorsight",
    node_count: paths.length,
    paths,
    ops,
    dtypes: paths.map(() => "bfloat16"),
    shapes: paths.map(() => [2, 3]),
    inputs: [[], [0], [1], [2], [3], [4], [4]],
    control: [[], [], [], [], [], [], [5]],
  };
}

describe("graph hierarchy", () => {
  it("starts with every scope collapsed and aggregates edges between them", () => {
    const h = new Hierarchy(graph());
    const v = h.visible();
    expect(v.items.map((i) => i.id)).toEqual(["s:input", "s:l.0", "s:l.1", "s:Gradients", "s:output"]);
    expect(v.clusters).toEqual([]);
    const e = v.edges.map((x) => `${x.from}>${x.to}${x.control ? " ctl" : ""}`);
    expect(e).toEqual(["s:input>s:l.0", "s:l.0>s:l.1", "s:l.1>s:Gradients", "s:l.1>s:output", "s:Gradients>s:output ctl"]);
  });
  it("expands, collapses (with descendants) and expands to a node", () => {
    const h = new Hierarchy(graph());
    h.toggle("l.0");
    h.toggle("l.0/fc");
    let v = h.visible();
    expect(v.clusters.map((c) => c.id)).toEqual(["s:l.0", "s:l.0/fc"]);
    expect(v.items.find((i) => i.id === "n:1")?.parent).toBe("s:l.0/fc");
    h.toggle("l.0");
    expect(h.expanded.size).toBe(0);
    h.expandTo(3);
    v = h.visible();
    expect(v.items.some((i) => i.id === "n:3")).toBe(true);
    expect(h.rep(1)).toBe("s:l.0");
  });
  it("groups numbered identical siblings and hides gradient nodes in readable mode", () => {
    const h = new Hierarchy(graph());
    expect(h.repeats.get("l.0")).toBe(2);
    expect(h.repeats.has("input")).toBe(false);
    expect(h.setReadable(true)).toBe(1);
    expect(h.visible().items.map((i) => i.id)).not.toContain("s:Gradients");
    expect(h.search("addmm")).toEqual([1, 3]);
    expect(h.search("grad")).toEqual([]);
    expect(() => h.search("(")).toThrow(SyntaxError);
  });
  it("describes outputs", () => {
    expect(describeOutput("bfloat16", [2, 3])).toBe("bfloat16[2, 3]");
    expect(describeOutput("", null)).toBe("");
  });
});
