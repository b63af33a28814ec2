"""The comparison view in Debian's chromium, on a planted-bug comparison made by the test."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tensorsight.data import LogdirProvider
from tests.conftest import ROOT
from tests.data.test_comparisons import make_comparison_logdir
from tests.e2e.conftest import board_server, shot

pytestmark = pytest.mark.browser

DOC_SHOT = ROOT / "docs" / "images" / "board-comparison.png"
SIDES_SHOT = ROOT / "docs" / "images" / "board-comparison-sides.png"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    logdir: Path = tmp_path_factory.mktemp("cmp-e2e")
    make_comparison_logdir(logdir, summaries=True)
    with board_server(LogdirProvider(logdir)) as url:
        yield url


def in_viewport(page, selector: str) -> bool:
    box = page.locator(selector).bounding_box()
    vp = page.viewport_size
    return (
        box is not None
        and box["y"] >= 0
        and box["y"] + box["height"] <= vp["height"]
        and box["x"] + box["width"] <= vp["width"]
    )


def test_first_divergence_is_pinned_and_visible_without_scrolling(page, server) -> None:
    page.goto(server + "/#comparison")
    page.wait_for_selector("#cmp-first.diverged .cmp-first-op")
    page.wait_for_selector("#cmp-table tbody tr")
    head = page.locator("#cmp-first").inner_text()
    assert "first divergence" in head.lower()
    assert "scaled by ~1.05" in head  # the advisor's sentence
    assert "Sequential.3.0" in head  # the planted bug: the second Linear's weight
    assert in_viewport(page, "#cmp-first")
    assert page.evaluate("document.querySelector('#content').scrollTop") == 0
    # the first-divergence row is marked in the table, and the colour scale is applied
    assert page.locator("#cmp-table tr.first").count() == 1
    coloured = page.locator('#cmp-table td.metric[data-metric="max_abs_err"]').evaluate_all(
        "tds => tds.filter(td => td.style.background && td.style.background !== 'transparent')"
        ".length"
    )
    assert coloured > 0
    # counts and the module overlay: the bug's scope is coloured as an error
    assert "error" in page.locator("#cmp-counts").inner_text()
    node = page.locator('#cmp-tree .cmp-node[data-path="Sequential.3"]')
    assert node.get_attribute("data-verdict") == "error"
    # both training runs' loss curves, overlaid next to the table
    page.wait_for_selector('#cmp-loss[data-series="2"]')
    assert "loss/train" in page.locator("#cmp-losses").inner_text()
    path = shot(page, "comparison-overview")
    if not DOC_SHOT.exists() or os.environ.get("TENSORSIGHT_UPDATE_SCREENSHOTS"):
        shutil.copyfile(path, DOC_SHOT)


def test_filter_sort_scope_and_direction(page, server) -> None:
    page.goto(server + "/#comparison")
    page.wait_for_selector("#cmp-table tbody tr")
    total = page.locator("#cmp-status").inner_text()
    page.check('#cmp-filters input[data-verdict="error"]')
    page.wait_for_function(
        "() => [...document.querySelectorAll('#cmp-table tbody tr')]"
        ".every(tr => tr.dataset.verdict === 'error')"
    )
    page.uncheck('#cmp-filters input[data-verdict="error"]')
    page.wait_for_function(f"() => document.querySelector('#cmp-status').innerText === {total!r}")
    # sort by max_abs_err, largest first
    page.click('#cmp-table th[data-col="max_abs_err"]')
    page.wait_for_selector('#cmp-table th[data-col="max_abs_err"]:has-text("▼")')
    # backward only
    page.click('#cmp-direction button[data-direction="backward"]')
    page.wait_for_function(
        "() => [...document.querySelectorAll('#cmp-table tbody tr td:nth-child(4)')]"
        ".every(td => td.innerText === 'bwd')"
    )
    page.click('#cmp-direction button[data-direction=""]')
    # click a scope in the module tree: only its rows remain
    page.click('#cmp-tree .cmp-node[data-path="Sequential.3"]')
    page.wait_for_function(
        "() => [...document.querySelectorAll('#cmp-table tbody td.module')]"
        ".every(td => td.innerText.startsWith('Sequential.3'))"
    )
    assert "Sequential.3" in page.locator(".cmp-scope").inner_text()
    # colour the tree by a metric
    page.select_option("#cmp-color-by", "max_abs_err")
    page.wait_for_selector('#cmp-tree .cmp-chip[title^="worst max_abs_err"]')
    # metric column chooser: drop cosine
    page.click("#cmp-columns summary")
    page.uncheck('#cmp-columns input[data-metric="cosine"]')
    page.wait_for_function("() => !document.querySelector('#cmp-table th[data-col=\"cosine\"]')")
    page.check('#cmp-columns input[data-metric="cosine"]')
    page.click("#cmp-columns summary")
    shot(page, "comparison-filtered")


def test_drill_down_and_replay(page, server) -> None:
    page.goto(server + "/#comparison")
    page.wait_for_selector("#cmp-first-open")
    page.click("#cmp-first-open")
    page.wait_for_selector("#cmp-detail #cmp-heat")
    detail = page.locator("#cmp-detail")
    assert in_viewport(page, "#cmp-detail .cmp-detail-head")
    assert "statistics" in detail.inner_text().lower()
    assert page.locator("#cmp-worst tbody tr").count() == 10
    assert int(page.locator("#cmp-hist").get_attribute("data-bins")) > 0
    shot(page, "comparison-detail")
    # an op output: replay it on the bench inputs
    page.click("#cmp-detail-close")
    page.fill("#cmp-op", "addmm")
    page.fill("#cmp-module", "3.0")
    page.wait_for_function(
        "() => [...document.querySelectorAll('#cmp-table tbody tr')].every(tr =>"
        " tr.querySelector('td.op').innerText.includes('addmm')"
        " && tr.querySelector('td.module').innerText.includes('3.0'))"
    )
    page.locator("#cmp-table tbody tr", has_text="output.0").first.click()
    page.wait_for_selector("#cmp-replay:not([disabled])")
    page.click("#cmp-replay")
    page.wait_for_selector("#cmp-replay-out table")
    assert "does not reproduce" in page.locator("#cmp-replay-out").inner_text()
    assert "error gain" in page.locator("#cmp-gain").inner_text()
    shot(page, "comparison-replay")


def test_input_row_drill_down_says_what_gain_means(page, server) -> None:
    page.goto(server + "/#comparison")
    page.wait_for_selector("#cmp-first-open")
    page.click("#cmp-first-open")  # the planted bug's first divergence is an input row
    page.wait_for_selector("#cmp-detail #cmp-gain")
    gain = page.locator("#cmp-gain p").inner_text()
    assert "input of this op" in gain
    assert "defined for outputs only" in gain
    assert "output.0: gain" in gain
    assert "error gain \N{EN DASH}" not in gain
    assert page.locator("#cmp-gain th", has_text="err/budget").count() == 1
    page.locator("#cmp-hist").scroll_into_view_if_needed()
    shot(page, "comparison-input-gain")


# ---------------------------------------------------------------- side by side


def make_large_comparison(logdir: Path, ops: int = 6000) -> None:
    """A written comparison of ``ops`` ops, every tenth only in the target (no dumps)."""
    from tensorsight.compare.result import Comparison, OpComparison

    rows = []
    t = 0
    for i in range(ops):
        module = f"Big.layers.{i // 40}.{'attn' if i % 40 < 20 else 'mlp'}"
        if i % 10 == 0:
            rows.append(
                OpComparison(
                    t,
                    "aten._to_copy.default",
                    module,
                    "forward",
                    "output.0",
                    shape_target=(4, 4),
                    dtype_target="bfloat16",
                    verdict="warning",
                    reason="Op only in target (a dtype cast, e.g. inserted by autocast).",
                    op_target="aten._to_copy.default",
                    index_target=t,
                    match="unmatched",
                    mode="none",
                )
            )
            t += 1
        rows.append(
            OpComparison(
                i,
                "aten.mm.default",
                module,
                "forward",
                "output.0",
                (4, 4),
                (4, 4),
                "float32",
                "bfloat16",
                cosine=0.99999,
                max_abs_err=1e-3,
                verdict="pass",
                reason="Error within budget.",
                op_target="aten.mm.default",
                index_target=t,
                match="name",
                budget=1e-2,
                error=1e-3,
            )
        )
        t += 1
    rows.sort(key=lambda r: r.index if r.match != "unmatched" else r.index_target)
    out = logdir / "compare" / "large"
    out.mkdir(parents=True)
    Comparison("big/bench", "big/target", tuple(rows), metrics=("cosine", "max_abs_err")).to_json(
        out / "comparison.json"
    )


@pytest.fixture(scope="module")
def structures(tmp_path_factory: pytest.TempPathFactory):
    from tests.board.views.test_comparison_trace import make_structure_logdir

    logdir = make_structure_logdir(tmp_path_factory.mktemp("cmp-structures"))
    make_large_comparison(logdir)
    with board_server(LogdirProvider(logdir)) as url:
        yield url


def open_comparison(page, url: str, name: str, *, sides: bool = False) -> None:
    page.goto(url + "/#comparison")
    page.wait_for_selector("#cmp-table tbody tr", state="attached")
    if page.locator("#cmp-select").input_value() != name:
        before = page.locator(".cmp-runs").inner_text()
        page.select_option("#cmp-select", name)
        page.wait_for_function(
            "t => document.querySelector('.cmp-runs').innerText !== t", arg=before
        )
        page.wait_for_selector("#cmp-table tbody tr", state="attached")
    page.click(f'#cmp-mode button[data-mode="{"sides" if sides else "table"}"]')
    page.wait_for_selector(".cmp-sbs-line.op" if sides else "#cmp-table tbody tr")
    page.wait_for_selector("#cmp-tree .cmp-node")  # this comparison's tree (cleared on switch)


def scroll_box_contains(page, selector: str) -> bool:
    return page.evaluate(
        """sel => { const el = document.querySelector(sel);
        const box = document.querySelector('#cmp-sbs-scroll').getBoundingClientRect();
        const r = el.getBoundingClientRect();
        return r.top >= box.top && r.bottom <= box.bottom; }""",
        selector,
    )


def test_side_by_side_shows_autocast_casts_on_the_target_side(page, structures) -> None:
    open_comparison(page, structures, "compare/autocast", sides=True)
    casts = page.locator('.cmp-sbs-line.op[data-status="target"]')
    assert casts.count() >= 5
    for i in range(casts.count()):
        line = casts.nth(i)
        assert "_to_copy" in line.locator(".cmp-sbs-cell.target").inner_text()
        assert "absent" in (line.locator(".cmp-sbs-cell.bench").get_attribute("class") or "")
    matched = page.locator('.cmp-sbs-line.op[data-status="matched"]').first
    assert matched.locator(".dt.differ").count() == 2  # float32 against bfloat16
    summary = page.locator("#cmp-sbs-summary").inner_text()
    assert "only in target" in summary
    assert "0 only in bench" in summary
    # the next-difference button walks the casts
    page.click("#cmp-sbs-next")
    page.wait_for_selector(".cmp-sbs-line.focus")
    assert page.locator(".cmp-sbs-line.focus").get_attribute("data-status") == "target"
    assert "difference 1 of" in page.locator("#cmp-sbs-diffnav").inner_text()
    shot(page, "comparison-sides-autocast")


def test_extra_call_and_missing_module_are_highlighted(page, structures) -> None:
    open_comparison(page, structures, "compare/extra-call", sides=True)
    extra = page.locator('.cmp-sbs-line.scope[data-side="target"]')
    assert extra.count() >= 2
    assert "only in target" in extra.first.inner_text()
    assert "absent" in (extra.first.locator(".cmp-sbs-cell.bench").get_attribute("class") or "")
    shot(page, "comparison-sides-extra-call")
    # a module missing on the target side: the banner says so before anything else
    open_comparison(page, structures, "compare/missing-module")
    page.wait_for_selector("#cmp-first-structure")
    note = page.locator("#cmp-first-structure").inner_text()
    assert "Structures differ before this op" in note
    assert "Net.norm" in note
    assert in_viewport(page, "#cmp-first-structure")
    page.click("#cmp-first-upstream")
    page.wait_for_selector(".cmp-sbs-line.focus")
    focus = page.locator(".cmp-sbs-line.focus")
    assert focus.get_attribute("data-status") == "bench"
    assert "native_layer_norm" in focus.locator(".cmp-sbs-cell.bench").inner_text()
    assert scroll_box_contains(page, ".cmp-sbs-line.focus")
    norm = page.locator('.cmp-sbs-line.scope[data-side="bench"]').first
    assert "only in bench" in norm.inner_text()
    path = shot(page, "comparison-sides-missing-module")
    if not SIDES_SHOT.exists() or os.environ.get("TENSORSIGHT_UPDATE_SCREENSHOTS"):
        shutil.copyfile(path, SIDES_SHOT)


def test_jump_between_a_row_and_its_place(page, structures) -> None:
    open_comparison(page, structures, "compare/extra-call")
    # a backward row inside a scope that starts folded (it matched one to one)
    page.click('#cmp-direction button[data-direction="backward"]')
    page.fill("#cmp-module", "Net.head")
    page.wait_for_function(
        "() => [...document.querySelectorAll('#cmp-table tbody td.module')]"
        ".every(td => td.innerText === 'Net.head')"
    )
    row = page.locator("#cmp-table tbody tr").nth(3)
    position = row.get_attribute("data-position")
    op = row.locator("td.op").inner_text()
    row.click()
    page.wait_for_selector("#cmp-detail-locate")
    page.click("#cmp-detail-locate")
    page.wait_for_selector(".cmp-sbs-line.focus")
    focus = page.locator(".cmp-sbs-line.focus")
    assert focus.locator(".cmp-sbs-cell.bench .cmp-sbs-op").get_attribute("title") == op
    assert scroll_box_contains(page, ".cmp-sbs-line.focus")
    shot(page, "comparison-sides-jump")
    # and back: the op's line opens its row, whose "table" button shows it in the table
    focus.locator(".cmp-sbs-cell.bench").click()  # the drill-down covers the right side
    page.wait_for_selector("#cmp-detail-table")
    page.wait_for_function(
        "() => document.querySelector('#cmp-detail h3').innerText.includes('Net') ||"
        " document.querySelector('#cmp-detail .muted').innerText.includes('Net.head')"
    )
    page.click("#cmp-detail-table")
    target = page.locator("#cmp-detail h3").get_attribute("data-position")
    page.wait_for_selector(f'#cmp-table tr.selected[data-position="{target}"]')
    page.wait_for_function(
        'p => { const tr = document.querySelector(`#cmp-table tr[data-position="${p}"]`);'
        " const r = tr && tr.getBoundingClientRect();"
        " return r && r.top >= 0 && r.bottom <= window.innerHeight; }",
        arg=target,
    )
    assert position is not None
    assert page.locator("#cmp-module").input_value() == ""  # filters were cleared


def test_folding_a_header_hides_its_ops(page, structures) -> None:
    open_comparison(page, structures, "compare/same", sides=True)
    assert "Same structure" in page.locator("#cmp-sbs-summary").inner_text()
    folded = page.locator('.cmp-sbs-line.scope:has(.cmp-sbs-caret:text("▸"))').first
    line_id = folded.get_attribute("data-id")
    before = page.locator(".cmp-sbs-line").count()
    folded.click()
    page.wait_for_function(
        'id => { const l = document.querySelector(`.cmp-sbs-line[data-id="${id}"]`);'
        " return l && l.querySelector('.cmp-sbs-caret').innerText === '▾'; }",
        arg=line_id,
    )
    assert page.locator(".cmp-sbs-line").count() > before
    page.uncheck("#cmp-sbs-fold")
    page.wait_for_function(
        "() => ![...document.querySelectorAll('.cmp-sbs-caret')].some(c => c.innerText === '▸')"
    )


def test_a_comparison_that_passes_does_not_look_alarming(page, structures) -> None:
    open_comparison(page, structures, "compare/same")
    page.wait_for_selector("#cmp-first.agree")
    coloured = page.locator("#cmp-table td.metric, #cmp-table td.ratio").evaluate_all(
        "tds => tds.filter(td => td.style.background && td.style.background !== 'transparent')"
        ".length"
    )
    assert coloured == 0
    shot(page, "comparison-healthy")
    # in a comparison with warnings only warning and error rows carry colour
    open_comparison(page, structures, "compare/missing-module")
    page.wait_for_selector("#cmp-table tr[data-verdict='error']")
    verdicts = page.locator("#cmp-table tbody tr").evaluate_all(
        "trs => trs.filter(tr => [...tr.querySelectorAll('td.metric, td.ratio')].some(td =>"
        " td.style.background && td.style.background !== 'transparent'))"
        ".map(tr => tr.dataset.verdict)"
    )
    assert verdicts
    assert "pass" not in verdicts


def test_a_large_trace_is_virtualised(page, structures) -> None:
    open_comparison(page, structures, "compare/large", sides=True)
    summary = page.locator("#cmp-sbs-summary").inner_text()
    assert "bench 6000 ops · target 6600 ops" in summary
    assert page.locator(".cmp-sbs-line").count() < 150
    total = page.evaluate(
        "() => document.querySelector('.cmp-sbs-spacer').getBoundingClientRect().height / 22"
    )
    assert total > 6600
    page.evaluate(
        "() => { const s = document.querySelector('#cmp-sbs-scroll');"
        " s.scrollTop = s.scrollHeight; }"
    )
    last = round(total) - 1
    page.wait_for_selector(f'.cmp-sbs-line[data-line="{last}"]')
    assert page.locator(".cmp-sbs-line").count() < 150
    assert page.locator(".cmp-sbs-line.loading").count() == 0
    shot(page, "comparison-sides-large")


def test_a_healthy_autocast_comparison_shows_its_casts_as_one_sided(page, structures) -> None:
    """fp32 vs bf16 autocast: no warning pill, no amber tree, no ⚠ on the side-by-side tab."""
    open_comparison(page, structures, "compare/autocast")
    page.wait_for_selector("#cmp-first.agree")
    counts = page.locator("#cmp-counts").inner_text()
    assert "0 warning" in counts
    assert "0 unmatched" in counts
    one_sided = page.locator('#cmp-counts .cmp-count[data-kind="one_sided"]').inner_text()
    assert int(one_sided.split()[0]) >= 5
    assert "⚠" not in page.locator("#cmp-mode").inner_text()
    verdicts = page.locator("#cmp-tree .cmp-node").evaluate_all(
        "els => els.map(e => e.dataset.verdict)"
    )
    assert verdicts
    assert set(verdicts) == {"pass"}
    assert "one-sided" in page.locator("#cmp-tree").inner_text()
    cast = page.locator("#cmp-table tbody tr.one-sided").first
    assert cast.locator("td.verdict").inner_text() == "one-sided"
    # one op numbering: the table's first column is the op's index, as in the CLI
    first = page.locator("#cmp-table tbody tr").first
    assert first.locator("td").first.inner_text().isdigit()
    assert "index" in page.locator("#cmp-table thead").inner_text()


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (1920, 1080)])
def test_the_drill_down_drawer_covers_no_control(browser, server, width, height) -> None:
    """Issue 22: the drawer took the banner's buttons and the table's filters; the view now
    gives it its width, so every control of the banner, the bar and the filters stays left
    of it and clickable."""
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    try:
        page.goto(server + "/#comparison")
        page.wait_for_selector("#cmp-first-open")
        page.click("#cmp-first-open")
        page.wait_for_selector("#cmp-detail #cmp-heat")
        drawer = page.locator("#cmp-detail").bounding_box()
        assert drawer["x"] + drawer["width"] <= width + 1
        controls = page.locator(
            ".view-comparison .cmp-bar :is(button, select, input, summary),"
            " #cmp-first button, #cmp-filters :is(button, select, input)"
        )
        assert controls.count() >= 8
        for i in range(controls.count()):
            c = controls.nth(i)
            if not c.is_visible():
                continue
            box = c.bounding_box()
            assert box["x"] + box["width"] <= drawer["x"] + 0.5, (
                c.evaluate("e => e.outerHTML.slice(0, 80)"),
                box,
                drawer,
            )
        page.click("#cmp-first button:not(#cmp-first-open)")  # "side by side", not covered
        page.click("#cmp-detail-close")
        page.wait_for_selector("#cmp-detail", state="hidden")
        assert "detail-open" not in (page.locator(".view-comparison").get_attribute("class") or "")
    finally:
        context.close()
