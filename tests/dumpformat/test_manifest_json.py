"""The manifest's JSON: the same text whether step entries are encoded fresh or cached."""

from __future__ import annotations

import json
from dataclasses import asdict, replace

from tensorsight.dumpformat.schema import DumpManifest, StepInfo, step_json
from tensorsight.dumpformat.writer import base_manifest


def _plain(m: DumpManifest) -> str:
    return json.dumps(asdict(m), indent=1, sort_keys=True, allow_nan=True)


def _manifest() -> DumpManifest:
    m = base_manifest(
        mode="statistics", level="op", framework="torch", framework_version="2.13",
        device="cpu", rank=0, world_size=1,
        extra={"steps": [], "note": 'a "quoted"\nline', "nested": {"steps": []}},
    )  # fmt: skip
    return replace(m, command_line=("train.py", "--steps", "a\nb"), dtypes=("float32",))


def test_same_text_as_json_dumps_of_the_whole_manifest():
    m = _manifest()
    assert m.to_json() == _plain(m)  # no steps
    steps = (
        StepInfo(step=0, complete=True, op_count=3, tensor_count=7, bytes_written=10),
        StepInfo(step=1, outputs_fingerprint="0a1b2c3d", observer_identical=False),
        StepInfo(step=2, complete=True, observer_identical=None),
    )
    m = replace(m, steps=steps)
    assert m.to_json() == _plain(m)
    cache = {s: step_json(s) for s in steps}
    assert m.to_json(cache.__getitem__) == _plain(m)
    assert DumpManifest.from_json(m.to_json()) == m


def test_the_writer_encodes_each_step_once(tmp_path):
    """A step already written reuses its text (the same object); a changed one is new."""
    from tensorsight.dumpformat import _np_stats
    from tensorsight.dumpformat.writer import DumpWriter

    dw = DumpWriter(tmp_path / "rank0", _manifest(), to_bytes=_np_stats.array_bytes)
    try:
        a, b = StepInfo(step=0, complete=True), StepInfo(step=1)
        first_a, first_b = dw._step_text(a), dw._step_text(b)
        assert dw._step_text(StepInfo(step=0, complete=True)) is first_a
        assert dw._step_text(b) is first_b
        changed = dw._step_text(replace(b, op_count=5))
        assert changed is not first_b
        assert changed == step_json(replace(b, op_count=5))
    finally:
        dw.close()
