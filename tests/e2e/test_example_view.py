"""A third-party view from an installed package, in Debian's chromium: its own ES module."""

from __future__ import annotations

import pytest

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
