"""The run list of a 1,000-run sweep (issue 22): only the rows in view are in the DOM, and
scrolling, the regex filter, selection, colours and the keyboard work as in a short list."""

from __future__ import annotations

import numpy as np
import pytest

from tensorsight.data import InMemoryProvider
from tests.e2e.conftest import board_server, shot

pytestmark = pytest.mark.browser

RUNS, STEPS = 1000, 4
ROWS = "#run-list li.run"


@pytest.fixture(scope="module")
def server():
    p = InMemoryProvider()
    steps = np.arange(STEPS)
    for r in range(RUNS):
        p.add_scalars(f"sweep-{r:04d}", "loss", steps=steps, values=np.exp(-steps / (r + 1)))
    with board_server(p) as url:
        yield url


def _rows(page) -> list[str]:
    return page.locator(ROWS).evaluate_all("rows => rows.map(r => r.dataset.run)")


def _points(page) -> str:
    return page.locator(".scalar-card[data-key='loss'] canvas").first.get_attribute("data-points")


def test_a_thousand_runs_keep_few_rows_in_the_dom(page1280, server):
    page = page1280
    page.goto(server + "/#scalars")
    page.wait_for_selector(f".scalar-card canvas[data-points='{RUNS * STEPS}']", timeout=60_000)
    assert page.locator("#run-list").get_attribute("data-total") == str(RUNS)
    first = _rows(page)
    assert first[0] == "sweep-0000"
    assert 10 <= len(first) <= 60  # the rows in view and a few beyond, not 1,000
    # the list is as tall as 1,000 rows: the scroll bar says how many there are
    height = page.locator(".sidebar").evaluate("el => el.scrollHeight")
    assert height > RUNS * 40

    # scroll to the middle: the rows drawn are the ones there, still few
    page.locator(".sidebar").evaluate("el => { el.scrollTop = 500 * 44; }")
    page.wait_for_function(
        "() => [...document.querySelectorAll('#run-list li.run')]"
        ".some(r => r.dataset.run === 'sweep-0500')"
    )
    middle = _rows(page)
    assert len(middle) <= 60
    assert "sweep-0000" not in middle
    row = page.locator('li.run[data-run="sweep-0500"]')
    assert row.is_visible()
    assert row.get_attribute("aria-posinset") == "501"
    assert row.get_attribute("aria-setsize") == str(RUNS)

    # a run deselected down there leaves the chart, and stays deselected scrolled away and back
    row.locator("input[type=checkbox]").uncheck()
    page.wait_for_selector(f".scalar-card canvas[data-points='{(RUNS - 1) * STEPS}']")
    # a colour set down there is kept too
    row.locator("input[type=color]").evaluate(
        "el => { el.value = '#00ff00'; el.dispatchEvent(new Event('input', {bubbles: true})); }"
    )
    # unfocused (a focused row stays: test_focus_survives_...), the row leaves the DOM
    page.evaluate("() => document.activeElement?.blur()")
    page.locator(".sidebar").evaluate("el => { el.scrollTop = 0; }")
    page.wait_for_function(
        "() => document.querySelector('#run-list li.run')?.dataset.run === 'sweep-0000'"
    )
    assert page.locator('li.run[data-run="sweep-0500"]').count() == 0  # not in the DOM now
    page.locator(".sidebar").evaluate("el => { el.scrollTop = 500 * 44; }")
    page.wait_for_selector('li.run[data-run="sweep-0500"]')
    assert not page.locator('li.run[data-run="sweep-0500"] input[type=checkbox]').is_checked()
    color = page.locator('li.run[data-run="sweep-0500"] input[type=color]').input_value()
    assert color == "#00ff00"
    assert page.locator('li.run[data-run="sweep-0501"] input[type=checkbox]').is_checked()
    shot(page, "run-list-virtual-middle")

    # the regex filter: 10 runs match, a short list (every row in the DOM)
    page.fill("#run-filter", "^sweep-09[0-9]0$")
    page.wait_for_function("() => document.querySelector('#run-list').dataset.total === '10'")
    assert len(_rows(page)) == 10
    assert not page.locator("#run-list").evaluate("el => el.classList.contains('virtual')")
    page.fill("#run-filter", "")
    page.wait_for_function(f"() => document.querySelector('#run-list').dataset.total === '{RUNS}'")
    page.locator("#runs-all").click()
    page.wait_for_selector(f".scalar-card canvas[data-points='{RUNS * STEPS}']")


def test_the_keyboard_walks_the_whole_list(page1280, server):
    page = page1280
    page.goto(server + "/#scalars")
    page.wait_for_selector(f".scalar-card canvas[data-points='{RUNS * STEPS}']", timeout=60_000)
    page.locator('li.run[data-run="sweep-0000"] input[type=checkbox]').focus()
    page.keyboard.press("End")  # to the last run: scrolled to and drawn
    focused = "() => document.activeElement?.closest('li.run')?.dataset.run"
    assert page.evaluate(focused) == "sweep-0999"
    assert page.locator('li.run[data-run="sweep-0999"]').is_visible()
    for _ in range(3):
        page.keyboard.press("ArrowUp")
    assert page.evaluate(focused) == "sweep-0996"
    page.keyboard.press("Space")  # toggles the focused run, as a checkbox does
    page.wait_for_selector(f".scalar-card canvas[data-points='{(RUNS - 1) * STEPS}']")
    assert not page.locator('li.run[data-run="sweep-0996"] input[type=checkbox]').is_checked()
    assert len(_rows(page)) <= 60
    page.keyboard.press("Home")
    assert page.evaluate(focused) == "sweep-0000"
    assert page.locator(".sidebar").evaluate("el => el.scrollTop") < 200
    page.keyboard.press("ArrowDown")
    assert page.evaluate(focused) == "sweep-0001"
    shot(page, "run-list-virtual-keyboard")


def test_focus_survives_scrolling_the_focused_row_away(page1280, server):
    """A focused checkbox scrolled out of the window stays focused (its row stays in the
    DOM, out of view): Space still toggles it, arrows go on from it, scrolled back it is
    the same element."""
    page = page1280
    page.goto(server + "/#scalars")
    page.wait_for_selector(f".scalar-card canvas[data-points='{RUNS * STEPS}']", timeout=60_000)
    focused = "() => document.activeElement?.closest('li.run')?.dataset.run ?? null"
    box = page.locator('li.run[data-run="sweep-0003"] input[type=checkbox]')
    box.focus()
    box.evaluate("el => { window.__focusedBox = el; }")
    sidebar = page.locator(".sidebar")
    # scroll far down with the wheel, as a user does, over a few frames
    sidebar.hover()
    for _ in range(10):
        page.mouse.wheel(0, 2000)
    page.wait_for_function("() => document.querySelector('.sidebar').scrollTop > 15000")
    page.wait_for_function(
        "() => [...document.querySelectorAll('#run-list li.run')]"
        ".some(r => Number(r.getAttribute('aria-posinset')) > 400)"
    )
    assert page.evaluate(focused) == "sweep-0003"
    rows = _rows(page)
    assert "sweep-0003" in rows  # kept, at its own place
    assert rows.index("sweep-0003") == 0  # in list order, before the window
    assert "sweep-0004" not in rows  # its neighbours left the DOM
    assert len(rows) <= 61
    assert page.locator('li.run[data-run="sweep-0003"]').get_attribute("aria-posinset") == "4"
    assert not page.locator('li.run[data-run="sweep-0003"]').is_visible() or (
        page.locator('li.run[data-run="sweep-0003"]').evaluate(
            "el => el.getBoundingClientRect().bottom < 0"
        )
    )
    shot(page, "run-list-virtual-focus-away")
    page.keyboard.press("Space")  # the focused, scrolled-away run is deselected
    page.wait_for_selector(f".scalar-card canvas[data-points='{(RUNS - 1) * STEPS}']")
    assert page.evaluate(focused) == "sweep-0003"
    # scrolled back, the row is the same element, still focused and unchecked
    sidebar.evaluate("el => { el.scrollTop = 0; }")
    page.wait_for_function(
        "() => document.querySelector('#run-list li.run')?.dataset.run === 'sweep-0000'"
    )
    assert page.evaluate("() => document.activeElement === window.__focusedBox")
    assert not box.is_checked()
    # scrolled away again, ArrowDown goes on from it and brings its neighbour into view
    sidebar.evaluate("el => { el.scrollTop = 600 * 44; }")
    page.wait_for_selector('li.run[data-run="sweep-0600"]')
    assert page.evaluate(focused) == "sweep-0003"
    page.keyboard.press("ArrowDown")
    assert page.evaluate(focused) == "sweep-0004"
    assert page.locator('li.run[data-run="sweep-0004"]').is_visible()
    assert sidebar.evaluate("el => el.scrollTop") < 1000
    page.keyboard.press("Space")  # back to every run selected
    page.wait_for_selector(f".scalar-card canvas[data-points='{(RUNS - 2) * STEPS}']")
    page.keyboard.press("ArrowUp")
    page.keyboard.press("Space")
    page.locator("#runs-all").click()
    page.wait_for_selector(f".scalar-card canvas[data-points='{RUNS * STEPS}']")
