"""Trace mode: real ops recorded under a TorchDispatchMode, checked against torch's own data."""

from pathlib import Path

import pytest

from tensorsight.errors import MigrationError, UsageError
from tensorsight.migrate import migrate
from tensorsight.migrate.trace import load_support, record_ops, trace_sites

SAMPLE = Path(__file__).parent / "sample_project"


def test_mps_support_data_comes_from_the_installed_torch():
    support = load_support("mps")
    assert support is not None
    assert "native_functions.yaml of torch" in support.source
    assert "aten.addmm.default" in support.supported  # via its structured delegate addmm.out
    assert "aten.mm.default" in support.supported
    assert "aten._cudnn_rnn.default" in support.known - support.supported
    rows = trace_sites(
        {"aten._cudnn_rnn.default": 2, "aten.mm.default": 1, "x.y": 1}, support, "t.py"
    )
    assert [(r.api, r.status) for r in rows] == [
        ("aten._cudnn_rnn.default", "unsupported"),
        ("aten.mm.default", "kept"),
        ("x.y", "manual"),
    ]
    assert "no mps kernel" in rows[0].message


def test_targets_without_data_and_bad_commands_are_clear_errors(tmp_path):
    assert load_support("accelerator") is None
    with pytest.raises(MigrationError, match="torch_npu wheel"):
        load_support("npu")
    with pytest.raises(UsageError, match="no support data for target 'xpu'"):
        load_support("xpu")
    with pytest.raises(UsageError, match=r"expected 'SCRIPT\.py \[ARGS\]'"):
        record_ops("python train.py", tmp_path)
    (tmp_path / "boom.py").write_text("raise SystemExit('no GPU here')\n")
    with pytest.raises(MigrationError, match="exited with code 1: no GPU here"):
        record_ops("boom.py", tmp_path)


@pytest.mark.integration
def test_trace_the_migrated_sample_project_for_mps():
    report = migrate(SAMPLE, "mps", unsafe_fixes=True, trace="train.py --steps 1")
    rows = [s for s in report.sites if s.rule_id == "trace/op-support"]
    apis = {s.api for s in rows}
    assert {"aten.addmm.default", "aten.gelu.default", "aten.nll_loss_forward.default"} <= apis
    assert "aten.gelu_backward.default" in apis  # backward ops are recorded too
    assert all(s.file == "train.py" and s.message for s in rows)
    assert all(s.status in ("kept", "unsupported", "manual") for s in rows)
