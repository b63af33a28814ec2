"""export_scalars as a library call."""

from __future__ import annotations

import pytest

from tensorsight.errors import UsageError
from tensorsight.summary import read_logdir
from tensorsight.summary.export import export_scalars
from tests.summary._events import scalar_event, write_events


def test_export_formats_and_errors(tmp_path):
    write_events(tmp_path / "logs" / "events.out.tfevents.1.h",
                 [scalar_event("a", 0.1 * i, i) for i in range(100)])  # fmt: skip
    log = read_logdir(tmp_path / "logs")
    calls: list[int] = []
    result = export_scalars(log, tmp_path / "a.parquet", progress=calls.append)
    assert (result.format, result.rows, result.series, calls) == ("parquet", 100, 1, [1])
    with pytest.raises(UsageError, match="already exists"):
        export_scalars(log, tmp_path / "a.parquet")
    with pytest.raises(UsageError, match="Export format 'xlsx'"):
        export_scalars(log, tmp_path / "a.xlsx", format="xlsx")
    text = export_scalars(log, tmp_path / "a.txt")
    assert text.format == "csv"
    lines = (tmp_path / "a.txt").read_text().splitlines()
    assert lines[0] == "run,tag,step,wall_time,value"
    assert lines[4] == ".,a,3,1003.0,0.30000001192092896"
