import { describe, expect, it } from "vitest";
import { describeOutput, type GraphJson, groupLabel, Hierarchy } from "./model";

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
    auxiliary: [5],
  };
}

const edgeText = (h: Hierarchy): string[] => h.visible().edges.map((x) => `${x.from}>${x.to}${x.control ? " ctl" : ""}`);

describe("graph hierarchy", () => {
  it("starts with scopes collapsed, consecutive identical blocks folded, edges aggregated", () => {
    const h = new Hierarchy(graph());
    const v = h.visible();
    expect(v.items.map((i) => i.id)).toEqual(["s:input", "g:l.0", "s:Gradients", "s:output"]);
    expect(v.items[1]?.group).toBe("g:l.0");
    expect(v.clusters).toEqual([]);
    // the edge l.0 -> l.1 is inside the group now
    expect(edgeText(h)).toEqual(["s:input>g:l.0", "g:l.0>s:Gradients", "g:l.0>s:output", "s:Gradients>s:output ctl"]);
    expect(h.groups.get("g:l.0")?.members).toEqual(["l.0", "l.1"]);
    expect(h.groupOpCount("g:l.0")).toBe(4);
  });
  it("unfolds a group into its blocks and folds it back", () => {
    const h = new Hierarchy(graph());
    h.setFolded("g:l.0", false);
    expect(h.visible().items.map((i) => i.id)).toEqual(["s:input", "s:l.0", "s:l.1", "s:Gradients", "s:output"]);
    expect(edgeText(h)).toEqual(["s:input>s:l.0", "s:l.0>s:l.1", "s:l.1>s:Gradients", "s:l.1>s:output", "s:Gradients>s:output ctl"]);
    h.setFolded("g:l.0", true);
    expect(h.visible().items.map((i) => i.id)).toContain("g:l.0");
    h.setFolded("g:nope", false); // unknown group: nothing happens
    expect(h.folded.size).toBe(1);
  });
  it("expands, collapses (with descendants) and expands to a node, unfolding on the way", () => {
    const h = new Hierarchy(graph());
    h.expandTo(3);
    expect(h.folded.size).toBe(0);
    let v = h.visible();
    expect(v.items.some((i) => i.id === "n:3")).toBe(true);
    expect(v.clusters.map((c) => c.id)).toEqual(["s:l.1", "s:l.1/fc"]);
    expect(v.items.find((i) => i.id === "n:3")?.parent).toBe("s:l.1/fc");
    h.toggle("l.1");
    expect(h.expanded.size).toBe(0);
    h.toggle("l.0");
    v = h.visible();
    expect(v.clusters.map((c) => c.id)).toEqual(["s:l.0"]);
    expect(h.rep(1)).toBe("s:l.0/fc");
  });
  it("keeps identical siblings apart when something runs between them", () => {
    const g = graph();
    // a top-level op between l.0 and l.1 (a residual add): folding them would draw a cycle
    g.paths.splice(3, 0, "aten::add_0");
    g.ops.splice(3, 0, "aten::add");
    g.dtypes.splice(3, 0, "float32");
    g.shapes.splice(3, 0, [2, 3]);
    g.inputs = [[], [0], [1], [2], [3], [4], [5], [5]];
    g.control = [[], [], [], [], [], [], [], [6]];
    g.auxiliary = [6];
    g.node_count = g.paths.length;
    const h = new Hierarchy(g);
    expect(h.groups.size).toBe(0);
    expect(h.repeats.get("l.0")).toBe(2); // still marked "1 of 2 identical"
    expect(h.visible().items.map((i) => i.id)).toEqual(["s:input", "s:l.0", "n:3", "s:l.1", "s:Gradients", "s:output"]);
  });
  it("folds parallel identical branches, whatever order their scopes first appear in", () => {
    // two heads fed by x, joined by cat; the weights come first (as ONNX initializers do)
    const paths = ["h.1/w", "h.0/w", "x", "h.0/aten::mm_0", "h.1/aten::mm_1", "aten::cat_0"];
    const ops = ["Parameter", "Parameter", "IO Node", "aten::mm", "aten::mm", "aten::cat"];
    const inputs = [[], [], [], [2, 1], [2, 0], [3, 4]];
    const h = new Hierarchy({ run: "r", tag: "g", source: "onnx", node_count: 6, paths, ops, dtypes: paths.map(() => ""), shapes: paths.map(() => null), inputs, control: paths.map(() => []), auxiliary: [] });
    expect(h.groups.get("g:h.1")?.members).toEqual(["h.1", "h.0"]);
    expect(h.visible().items.map((i) => i.id)).toEqual(["g:h.1", "n:2", "n:5"]);
  });
  it("hides the server's auxiliary nodes in readable mode", () => {
    const h = new Hierarchy(graph());
    expect(h.repeats.has("input")).toBe(false);
    expect(h.setReadable(true)).toBe(1);
    expect(h.visible().items.map((i) => i.id)).not.toContain("s:Gradients");
    expect(h.search("addmm")).toEqual([1, 3]);
    expect(h.search("grad")).toEqual([]);
    expect(() => h.search("(")).toThrow(SyntaxError);
    expect(h.setReadable(false)).toBe(0);
    expect(h.search("grad")).toEqual([5]);
  });
  it("draws a parameter inside its only consumer of the same scope", () => {
    const paths = ["x", "fc/weight", "fc/aten::addmm_0", "shared", "a/aten::mul_0", "b/aten::mul_1"];
    const ops = ["IO Node", "Parameter", "aten::addmm", "Parameter", "aten::mul", "aten::mul"];
    const h = new Hierarchy({ run: "r", tag: "g", source: "t", node_count: 6, paths, ops, dtypes: paths.map(() => ""), shapes: paths.map(() => null), inputs: [[], [], [0, 1], [], [2, 3], [4, 3]], control: paths.map(() => []), auxiliary: [] });
    h.toggle("fc");
    const ids = h.visible().items.map((i) => i.id);
    expect(ids).toContain("n:2");
    expect(ids).not.toContain("n:1"); // inside addmm
    expect(ids).toContain("n:3"); // two consumers: its own box
    expect(h.inlined[2]).toBe(1);
    expect(h.drawnAs(1)).toBe("n:2");
    expect(h.drawnAs(3)).toBe("n:3");
    expect(h.visible().edges.some((e) => e.from === "n:1")).toBe(false);
  });
  it("describes outputs and groups", () => {
    expect(describeOutput("bfloat16", [2, 3])).toBe("bfloat16[2, 3]");
    expect(describeOutput("", null)).toBe("");
    expect(groupLabel(["enc/layers.0", "enc/layers.1", "enc/layers.23"])).toBe("layers.0–23");
    expect(groupLabel(["a1", "b1"])).toBe("a1, b1");
  });
});
