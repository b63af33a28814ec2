"""The kernel's accumulator layout is one table (``_layout.ACCUMULATORS``) for C and Python."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tensorsight.compare.metrics import _layout, _native, kernel


def test_every_summed_or_maxed_slot_is_a_field_of_the_running_totals():
    acc = kernel._Acc()
    for name, rule in _layout.ACCUMULATORS:
        assert rule in ("moment", "sum", "max"), name
        if rule != "moment":
            assert isinstance(getattr(acc, name), float), name
    assert _layout.ROW[-2:] == ("kx", "ky")
    assert len(set(_layout.ROW)) == len(_layout.ROW)


def test_the_c_flags_are_made_from_the_table():
    flags = _layout.c_defines()
    assert "-DTS_MAX_ULP_Q=12" in flags
    assert f"-DTS_NACC={len(_layout.SLOTS)}" in flags
    assert f"-DTS_NROW={len(_layout.ROW)}" in flags
    is_max = next(f for f in flags if f.startswith("-DTS_IS_MAX(i)="))
    maxed = {int(i) for i in re.findall(r"\(i\) == (\d+)", is_max)}
    assert maxed == {i for i, (_, rule) in enumerate(_layout.ACCUMULATORS) if rule == "max"}
    assert set(flags) <= set(_native._FLAGS)


def test_the_c_file_names_slots_not_numbers():
    source = Path(_native._SOURCE).read_text(encoding="utf-8")
    code = re.sub(r"/\*.*?\*/", "", source, flags=re.DOTALL)
    assert not re.findall(r"\b(?:acc|tail|o)\[\d+\]", code)
    named = set(re.findall(r"\bTS_([A-Z0-9_]+)\b", code))
    assert {n.upper() for n in _layout.ROW} <= named  # every slot is used by its name


def test_the_c_file_refuses_to_compile_without_the_layout(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler here")
    plain = subprocess.run(
        [cc, "-fsyntax-only", str(_native._SOURCE)], capture_output=True, text=True, check=False
    )
    assert plain.returncode != 0
    assert "compile with the layout flags of compare/metrics/_layout.py" in plain.stderr
    flagged = subprocess.run(
        [cc, "-fsyntax-only", *_layout.c_defines(), str(_native._SOURCE)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert flagged.returncode == 0, flagged.stderr
