"""The precision view in chromium: the ops of a bf16-autocast graph, filtered and exported."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import ARTIFACTS, shot
from tests.e2e.graphs_logs import model_board

pytestmark = pytest.mark.browser
__all__ = ["model_board"]


def test_precision_table_filter_and_xlsx_export(page, model_board):
    import openpyxl

    page.goto(model_board + "/#precision")
    page.wait_for_selector("#precision-table[data-rows]")
    summary = page.locator("#precision-summary").inner_text()
    assert "in reduced precision" in summary
    assert "bfloat16" in summary
    all_rows = int(page.locator("#precision-table").get_attribute("data-rows"))

    page.check("#precision-reduced")
    page.wait_for_function(
        f"() => Number(document.querySelector('#precision-table').dataset.rows) < {all_rows}"
    )
    dtypes = page.locator("#precision-table tbody td:nth-child(4)").all_inner_texts()
    assert dtypes
    assert set(dtypes) == {"bfloat16"}

    page.fill("#precision-filter", "addmm")
    page.wait_for_function(
        "() => document.querySelectorAll('#precision-table tbody tr').length === 4"
    )
    shot(page, "precision-filtered")

    with page.expect_download() as info:
        page.click("#precision-export")
    path = ARTIFACTS / "precision-export.xlsx"
    info.value.save_as(str(path))
    wb = openpyxl.load_workbook(path, read_only=True)
    rows = list(wb["ops"].iter_rows(values_only=True))
    assert rows[0][:5] == ("name", "op", "module_path", "compute_dtype", "reduced")
    assert len(rows) == 5
    assert all("addmm" in r[0] and r[3] == "bfloat16" and r[4] == "yes" for r in rows[1:])

    page.fill("#precision-filter", "[")
    page.wait_for_function(
        "() => document.querySelector('#precision-error').innerText.includes('regular expression')"
    )
