"""The graphs view in chromium: folded blocks, nested expand, search, minimap, readable,
ONNX and MindSpore graph files."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import board_server, shot
from tests.e2e.graphs_logs import model_board, training_board

pytestmark = pytest.mark.browser
__all__ = ["model_board", "training_board"]


def _visible(page) -> int:
    return int(page.locator("#graph-host").get_attribute("data-visible"))


def _wait_visible(page, op: str, n: int) -> None:
    page.wait_for_function(
        f"() => Number(document.querySelector('#graph-host').dataset.visible) {op} {n}"
    )


def test_graph_fold_expand_search_and_node_panel(page, model_board):
    page.goto(model_board + "/#graphs")
    page.wait_for_selector("#graph-host[data-loaded='bf16/graph']")
    # input, the two identical encoder layers folded into one group, output
    assert page.locator(".box").count() == 3
    group = page.locator(".box.group[data-id='g:layers.0']")
    assert "layers.0\u20131" in group.text_content()  # en dash
    assert "\u00d72" in group.text_content()  # times sign
    assert group.locator("rect.stack").count() == 1  # drawn as a stack of blocks
    folded = _visible(page)
    shot(page, "graphs-folded")

    group.click()
    assert "blocks\t2" in page.locator("#graph-panel").inner_text()
    page.locator("#graph-unfold").click()
    page.wait_for_selector(".box.scope[data-id='s:layers.1']")
    layers = page.locator(".box.scope.repeat")
    assert layers.count() == 2
    assert "1 of 2 identical" in layers.first.text_content()
    unfolded = _visible(page)
    assert unfolded == folded + 1

    page.locator(".box.scope[data-id='s:layers.0']").dblclick()
    page.wait_for_selector(".cluster[data-id='s:layers.0']")
    assert _visible(page) > unfolded
    # the scope's panel follows: it offers to collapse it and to fold the blocks again
    assert page.locator("#graph-expand").inner_text() == "collapse"
    assert "identical siblings\t2" in page.locator("#graph-panel").inner_text()
    # the attention block expanded too: its linear layers carry their weights inside
    page.locator(".box.scope[data-id='s:layers.0/self_attn']").dblclick()
    page.wait_for_selector(".cluster[data-id='s:layers.0/self_attn']")
    assert page.locator(".cluster[data-id='s:layers.0/self_attn'] ~ .box").count() > 0
    assert "+1 param" in page.locator("#graph-host").inner_text()
    # every box of the nested scope lies inside its cluster
    inside = page.evaluate(
        """() => {
        const c = document.querySelector(".cluster[data-id='s:layers.0'] rect").getBBox();
        const boxes = [...document.querySelectorAll(".box")].filter(b => {
          const id = b.dataset.id; return id.startsWith("s:layers.0/") });
        return boxes.length > 0 && boxes.every(b => {
          const m = b.transform.baseVal.consolidate().matrix, r = b.querySelector("rect");
          return m.e >= c.x - 1 && m.e + r.width.baseVal.value <= c.x + c.width + 1
            && m.f >= c.y - 1 && m.f + r.height.baseVal.value <= c.y + c.height + 1; });
        }"""
    )
    assert inside
    shot(page, "graphs-expanded")

    # fold the blocks again from a block's panel: its expansion is kept for later
    page.click("#graph-fit")
    page.locator(".cluster[data-id='s:layers.0'] .cluster-label").click()
    page.wait_for_selector(".box.scope[data-id='s:layers.0']")
    page.locator(".box.scope[data-id='s:layers.0']").click()
    page.locator("#graph-fold").click()
    page.wait_for_selector(".box.group[data-id='g:layers.0']")
    assert _visible(page) == folded

    # search by op regex unfolds and expands to the first hit and opens its panel
    page.fill("#graph-search", "addmm")
    page.press("#graph-search", "Enter")
    page.wait_for_function(
        "() => document.querySelector('#graph-panel').innerText.includes('addmm')"
    )
    text = page.locator("#graph-panel").inner_text()
    assert "module path" in text
    assert "bfloat16" in text
    assert page.locator(".box.selected").count() == 1
    assert page.locator(".box.group").count() == 0
    shot(page, "graphs-search")

    # a parameter found by search is shown inside its consumer, which gets selected
    page.fill("#graph-search", "out_proj/weight")
    page.press("#graph-search", "Enter")
    page.wait_for_function(
        "() => document.querySelector('#graph-panel h3').innerText.endsWith('out_proj/weight')"
    )
    assert "Parameter" in page.locator("#graph-panel").inner_text()
    assert page.locator(".box.selected").count() == 1

    # a bad regex says so
    page.fill("#graph-search", "(")
    page.press("#graph-search", "Enter")
    assert "Invalid regex" in page.locator("#graph-hits").inner_text()


def test_minimap_follows_and_moves_the_view(page, model_board):
    page.goto(model_board + "/#graphs")
    page.wait_for_selector("#graph-host[data-loaded='bf16/graph']")
    page.locator(".box.group").dblclick()
    page.wait_for_selector(".box[data-id='s:layers.1']")
    page.locator(".box[data-id='s:layers.1']").dblclick()
    page.wait_for_selector(".cluster[data-id='s:layers.1']")
    mini = page.locator("#graph-minimap")
    assert mini.is_visible()
    # something is drawn in it (not a blank canvas)
    painted = page.evaluate(
        """() => { const c = document.querySelector('#graph-minimap');
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++; return n; }"""
    )
    assert painted > 200
    before = mini.get_attribute("data-view")
    page.mouse.move(500, 400)
    page.mouse.wheel(0, 600)  # zoom out: the outlined part grows
    page.wait_for_function(
        f"() => document.querySelector('#graph-minimap').dataset.view !== '{before}'"
    )
    zoomed = [float(v) for v in mini.get_attribute("data-view").split(",")]
    assert zoomed[2] > [float(v) for v in before.split(",")][2]
    # a click in the minimap's lower half moves the view down the drawing
    box = mini.bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] * 0.9)
    moved = [float(v) for v in mini.get_attribute("data-view").split(",")]
    assert moved[1] > zoomed[1]
    shot(page, "graphs-minimap")


def test_readable_hides_backward_and_optimizer_of_a_training_step(page, training_board):
    page.goto(training_board + "/#graphs")
    page.wait_for_selector("#graph-host[data-loaded='train/graph']")
    everything = _visible(page)
    page.fill("#graph-search", "^aten::mm_0$")
    page.press("#graph-search", "Enter")
    page.wait_for_selector(".box.selected")
    shot(page, "graphs-train-step")
    page.check("#graph-readable")
    _wait_visible(page, "<", everything)
    assert "hidden" in page.locator("#graph-info").inner_text()
    labels = " ".join(page.locator(".box .box-label").all_text_contents())
    # gradient matmuls, updates, the loss seed and the momentum clones are gone
    for gone in ("mm", "add_", "ones_like", "clone", "threshold_backward"):
        assert gone not in labels.split(), gone
    assert "nll_loss_forward" in labels
    # a hidden node cannot be found any more; the forward still can
    page.fill("#graph-search", "aten::mm_")
    page.press("#graph-search", "Enter")
    assert page.locator("#graph-hits").inner_text().startswith("0 hits")
    page.fill("#graph-search", "addmm")
    page.press("#graph-search", "Enter")
    page.wait_for_selector(".box.selected")
    shot(page, "graphs-train-step-readable")
    page.uncheck("#graph-readable")
    _wait_visible(page, ">", 0)


def test_onnx_model_file_and_a_broken_one(page, training_board):
    page.goto(training_board + "/#graphs")
    page.wait_for_selector("#graph-host[data-loaded]")
    options = page.locator("#graph-pick option").all_inner_texts()
    assert "onnx · encoder.onnx" in options
    assert "onnx · broken.onnx" in options
    page.select_option("#graph-pick", label="onnx · encoder.onnx")
    page.wait_for_selector("#graph-host[data-loaded='onnx/encoder.onnx']")
    # the exporter's node names give the module scopes (it shares the two layers' identical
    # weights, so the layers differ and are not folded)
    assert page.locator(".box.scope[data-id='s:layers.0']").count() == 1
    assert page.locator(".box.scope[data-id='s:layers.1']").count() == 1
    page.fill("#graph-search", "LayerNormalization")
    page.press("#graph-search", "Enter")
    page.wait_for_function(
        "() => document.querySelector('#graph-panel').innerText.includes('LayerNormalization')"
    )
    panel = page.locator("#graph-panel").inner_text()
    assert "float32[2, 8, 32]" in panel  # shapes from static inference
    shot(page, "graphs-onnx")
    page.select_option("#graph-pick", label="onnx · broken.onnx")
    page.wait_for_selector("#graph-host[data-error='1']")
    assert "not an ONNX model" in page.locator("#graph-error").inner_text()
    assert page.locator(".box").count() == 0
    shot(page, "graphs-onnx-broken")
    # back to a good graph: drawn again
    page.select_option("#graph-pick", label="onnx · encoder.onnx")
    page.wait_for_selector(".box.scope[data-id='s:layers.1']")


def test_mindspore_graph_files_readable(page, shared_data):
    from tensorsight.data import LogdirProvider

    with board_server(LogdirProvider(shared_data / "mindspore")) as url:
        page.goto(url + "/#graphs")
        page.wait_for_selector("#graph-host[data-loaded]")
        page.select_option("#graph-pick", label=". · ms_output_after_opt_0")
        page.wait_for_selector("#graph-host[data-loaded='./ms_output_after_opt_0']")
        assert page.locator(".box[data-id='s:Gradients']").count() == 1
        everything = _visible(page)
        page.check("#graph-readable")
        _wait_visible(page, "<", everything)
        assert page.locator(".box[data-id='s:Gradients']").count() == 0
        page.locator(".box[data-id='s:Default']").dblclick()
        page.wait_for_selector(".cluster[data-id='s:Default']")
        assert page.locator("[data-id='s:Default/optimizer-Momentum']").count() == 0
        assert page.locator("[data-id='s:Default/network-WithLossCell']").count() == 1
        shot(page, "graphs-mindspore-readable")
