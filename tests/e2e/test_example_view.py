"""A third-party view from an installed package, in Debian's chromium: its own ES module."""

from __future__ import annotations

from typing import Any

import pytest

from tensorsight.board import app as app_module
from tensorsight.board.views import FrontendMeta, View, view_registry
from tensorsight.data import InMemoryProvider
from tests.conftest import on_sys_path
from tests.e2e.conftest import board_server, shot

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server(example_view_site):
    p = InMemoryProvider()
    p.add_scalars("baseline", "loss", steps=[0, 1], values=[1.0, 0.5])
    p.add_scalars("baseline", "lr", steps=[0], values=[0.1])
    p.add_scalars("bf16", "loss", steps=[0], values=[2.0])
    with on_sys_path(example_view_site):
        server = board_server(p)
        url = server.__enter__()
    try:
        yield url
    finally:
        server.__exit__(None, None, None)


def test_the_shell_imports_the_third_party_module_and_it_renders(page, server):
    scripts: list[str] = []
    page.on("request", lambda r: scripts.append(r.url) if r.url.endswith("index.js") else None)
    page.goto(f"{server}/#tag_counts")
    table = page.locator("#view-tag_counts table.tag-counts")
    table.locator("tr[data-run='bf16']").wait_for()
    assert page.locator("#tabs button[data-view='tag_counts']").inner_text() == "Tag counts"
    assert f"{server}/views/tag_counts/index.js" in scripts
    assert table.locator("th").all_inner_texts() == ["run", "scalars"]
    assert table.locator("tr[data-run='baseline'] td").all_inner_texts() == ["baseline", "2"]
    assert table.locator("tr[data-run='bf16'] td").all_inner_texts() == ["bf16", "1"]
    assert page.locator("#view-tag_counts .tag-counts-note").inner_text() == "2 runs, 1 data kind"
    shot(page, "example-view")
    # the module re-renders on the shell's selection changes, like a built-in view
    page.locator(".sidebar input[type=checkbox][data-run='bf16']").uncheck()
    table.locator("tr[data-run='bf16']").wait_for(state="detached")
    assert page.locator("#view-tag_counts .tag-counts-note").inner_text() == "1 run, 1 data kind"
    # a built-in tab still loads its bundled code
    page.locator("#tabs button[data-view='scalars']").click()
    page.locator("#view-scalars").wait_for()


def test_a_module_that_exports_no_render_is_reported_in_the_page(page, tmp_path, monkeypatch):
    js = tmp_path / "broken.js"
    js.write_text("export const nothing = 1;\n", encoding="utf-8")

    class BrokenView(View):
        name = "broken"
        title = "Broken"

        def routes(self) -> list[Any]:
            return []

        def frontend(self) -> FrontendMeta:
            return FrontendMeta(es_module=js)

    def registry() -> Any:
        reg = view_registry()
        reg.add("broken", BrokenView)
        return reg

    monkeypatch.setattr(app_module, "view_registry", registry)
    with board_server(InMemoryProvider(), views=["scalars", "broken"]) as url:
        page.goto(f"{url}/#broken")
        error = page.locator("#content .error-text")
        error.wait_for()
        assert error.inner_text() == (
            "The front end of view broken failed to load: "
            "Error: /views/broken/index.js exports no render(el, ctx) function"
        )
