"""inspect_dump / format_inspection: op counts, table head, sizes, NaN/Inf."""

from __future__ import annotations

import torch

import tensorsight
from tensorsight.capture import format_inspection, inspect_dump


def test_inspection_counts_and_finds_nonfinite(tmp_path):
    x = torch.tensor([1.0, 0.0, -1.0])
    with tensorsight.dump(tmp_path / "d", mode="tensor") as d:
        (x / 0).sum()
        d.step()
        torch.relu(x)
    ins = inspect_dump(tmp_path / "d", head=3)
    assert (ins.format, ins.mode, ins.level, ins.complete) == ("tensorsight", "tensor", "op", True)
    assert ins.size_bytes > 0
    s0, s1 = ins.steps
    assert (s0.step, s0.op_count, s0.forward_ops, s0.backward_ops) == (0, 2, 2, 0)
    assert dict(s0.op_counts) == {"aten.div.Tensor": 1, "aten.sum.default": 1}
    assert len(s0.head) == 3
    assert [t.tensor for t in s0.nonfinite] == ["output.0", "input.0", "output.0"]
    assert s1.nonfinite == ()
    text = format_inspection(ins)
    assert "rank 0 step 0: 2 ops (2 forward, 0 backward)" in text
    assert "3 tensors with NaN/Inf" in text
    assert "nan=1 +inf=1 -inf=1" in text
    assert "no NaN/Inf" in text


def test_inspection_of_an_incomplete_dump(tmp_path):
    try:
        with tensorsight.dump(tmp_path / "d"):
            torch.ones(2) + 1
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    ins = inspect_dump(tmp_path / "d")
    assert not ins.complete
    assert "INCOMPLETE" in format_inspection(ins)
    assert "KeyboardInterrupt" in ins.incomplete_reasons[0]


def _cut_off_dump(folder):
    """A dump whose last step stopped before its rows reached the log (as after a crash
    within LOG_SECS of the step's start): no op table, manifest incomplete."""
    import json

    with tensorsight.dump(folder) as d:
        for _ in range(2):
            torch.ones(2) + 1
            d.step()
    (folder / "rank0" / "step1" / "ops.parquet").unlink()
    manifest = folder / "rank0" / "manifest.json"
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "complete": False}))
    return folder


def test_inspection_names_a_cut_off_step(tmp_path):
    text = format_inspection(inspect_dump(_cut_off_dump(tmp_path / "d")))
    assert "rank 0 step 0: 2 ops" in text
    assert "rank 0 step 1: no ops recorded (the run stopped before any reached" in text


def test_comparing_a_step_with_no_ops_on_either_side_is_an_input_error(tmp_path):
    from tests.conftest import run_cli

    d = _cut_off_dump(tmp_path / "d")
    res = run_cli("compare", str(d), str(d), "--step", "1", "-q")
    assert res.returncode == 2, res.stdout
    assert "is marked incomplete" in res.stderr  # a cut-off dump is refused first
    res = run_cli("compare", str(d), str(d), "--step", "1", "-q", "--allow-incomplete")
    assert res.returncode == 2, res.stdout
    assert res.stderr.startswith("error: Dumps")
    assert "step 1 has no recorded ops on either side" in res.stderr
    # the step that was recorded compares, but a cut-off dump never "agrees" (exit 3)
    assert run_cli("compare", str(d), str(d), "--step", "0", "--allow-incomplete").returncode == 3
