"""The native op capture (C++, level op, mode statistics) against the Python path and numpy."""

from __future__ import annotations

import math
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import tensorsight
from tensorsight.capture import _native_capture
from tensorsight.dumpformat.reader import read_dump
from tensorsight.dumpformat.schema import OpRecord

NATIVE = _native_capture.load()
needs_native = pytest.mark.skipif(
    NATIVE is None, reason=f"native op capture unavailable: {_native_capture._STATE.get('why')}"
)

# Where the two paths differ by design (docs/formats/dump.md, "Capture paths"): under a
# TorchDispatchMode autograd detaches the outputs it saves, accumulates gradients out of
# place and reshapes through view; torch.tensor() shows its allocation only without a mode.
_ONLY_ONE_SIDE = {"aten.detach.default", "aten.detach_.default", "aten.empty.memory_format"}
_SAME_OP = {
    "aten.add_.Tensor": "aten.add.Tensor",
    "aten._reshape_alias.default": "aten.view.default",
}


def _dump(
    path: Path, fn: Callable[[], Any], monkeypatch: pytest.MonkeyPatch, *, capture: str = "auto",
    steps: int = 1, **options: Any
) -> Any:  # fmt: skip
    monkeypatch.setenv("TENSORSIGHT_CAPTURE", capture)
    with tensorsight.dump(path, mode=options.pop("mode", "statistics"), **options) as d:
        for _ in range(steps):
            fn()
            d.step()
    return read_dump(path)


def _ops(dump: Any, step: int = 0) -> list[OpRecord]:
    return list(dump.step(step=step).ops)


def _key(o: OpRecord) -> tuple[Any, ...]:
    tensors = tuple((t.tensor, tuple(t.shape), t.dtype, t.device) for t in o.tensors)
    return (_SAME_OP.get(o.op, o.op), o.direction, o.module_path, o.grad_fn, tensors)


def _close(u: float | None, v: float | None) -> bool:
    if u is None or v is None:
        return u is v
    return u == v or (math.isnan(u) and math.isnan(v)) or abs(u - v) <= 1e-9 * max(1.0, abs(u))


def _assert_same_rows(python: Any, native: Any, steps: int) -> int:
    """Same ops (up to the documented differences) with the same statistics; rows checked."""
    checked = 0
    for step in range(steps):
        a = [o for o in _ops(python, step) if o.op not in _ONLY_ONE_SIDE]
        b = [o for o in _ops(native, step) if o.op not in _ONLY_ONE_SIDE]
        assert [_key(o) for o in a] == [_key(o) for o in b]
        for x, y in zip(a, b, strict=True):
            if x.op == y.op:  # the same text from both paths
                assert x.args == y.args, (x.op, x.args, y.args)
            assert x.op.startswith("tensorsight.") or x.args is not None, x.op
            for s, t in zip(x.tensors, y.tensors, strict=True):
                assert (s.stats is None) == (t.stats is None), (x.op, s.tensor)
                if s.stats is None:
                    continue
                for f in ("min", "max", "mean", "norm"):
                    assert _close(getattr(s.stats, f), getattr(t.stats, f)), (x.op, s.tensor, f)
                for f in ("nan_count", "posinf_count", "neginf_count"):
                    assert getattr(s.stats, f) == getattr(t.stats, f), (x.op, s.tensor, f)
                checked += 1
    return checked


class _Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln = torch.nn.LayerNorm(16)
        self.attn = torch.nn.MultiheadAttention(16, 2, batch_first=True)
        self.ff = torch.nn.Sequential(
            torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 16)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.ln(x)
        a, _ = self.attn(h, h, h)
        x = x + a
        return x + self.ff(x)


def _transformer_step(bf16: bool) -> Callable[[], None]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Embedding(50, 16), _Block(), _Block())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, 50, (2, 5))

    def step() -> None:
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            out = model(ids)
        out.float().pow(2).mean().backward()
        opt.step()

    return step


@needs_native
@pytest.mark.parametrize("bf16", [False, True], ids=["fp32", "bf16-autocast"])
def test_transformer_rows_match_the_python_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bf16: bool
) -> None:
    python = _dump(tmp_path / "py", _transformer_step(bf16), monkeypatch, capture="python", steps=2)
    native = _dump(tmp_path / "nat", _transformer_step(bf16), monkeypatch, steps=2)
    assert python.manifest().extra["capture"] == "python"
    assert native.manifest().extra["capture"] == "native"
    assert _assert_same_rows(python, native, steps=2) > 1000
    ops = _ops(native)
    # backward ops carry the forward op's module and their autograd node
    mm = [o for o in ops if o.op == "aten.mm.default" and o.direction == "backward"]
    assert mm
    assert all(o.module_path.startswith("Sequential.") and o.grad_fn for o in mm)
    assert {o.grad_fn for o in mm} >= {"AddmmBackward0"}
    # parameter gradients sit between the backward ops, in execution order
    grads = [i for i, o in enumerate(ops) if o.op == "tensorsight.param_grad"]
    assert len(grads) == sum(o.op == "tensorsight.param_grad" for o in _ops(python)) > 10
    assert grads[0] > 0
    assert ops[grads[0] - 1].direction == "backward"
    assert [o.index for o in ops] == sorted(o.index for o in ops)


@pytest.mark.parametrize(
    "capture", ["python", pytest.param("auto", marks=needs_native, id="native")]
)
def test_foreach_optimizer_writes_are_its_outputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capture: str
) -> None:
    """``_foreach_*_`` ops return nothing: the tensors they wrote are recorded as their
    outputs (``output.<j>``), measured after the write, the same on both paths."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 2))
    opt = torch.optim.AdamW(model.parameters(), lr=0.05, foreach=True)
    x = torch.randn(5, 4)

    def step() -> None:
        opt.zero_grad()
        model(x).square().sum().backward()
        opt.step()

    dump = _dump(tmp_path / capture, step, monkeypatch, capture=capture, steps=2)
    assert dump.manifest().extra["capture"] == ("python" if capture == "python" else "native")
    ops = [o for o in _ops(dump, 1) if o.op.split(".")[1].startswith("_foreach_")]
    ops = [o for o in ops if o.op.split(".")[1].endswith("_")]  # in place: returns nothing
    assert len(ops) >= 6
    for o in ops:
        assert [t.tensor for t in o.outputs] == [f"output.{j}" for j in range(4)], o.op
    # the last write into the parameters: its outputs are the parameters after the step
    last = [o for o in ops if o.op == "aten._foreach_addcdiv_.ScalarList"][-1]
    for rec, p in zip(last.outputs, model.parameters(), strict=True):
        assert rec.stats is not None
        want = float(torch.linalg.vector_norm(p.detach().double()))
        assert rec.stats.norm == pytest.approx(want, rel=1e-12)
    if capture != "python":  # the same rows as the Python path's
        monkeypatch.undo()
        torch.manual_seed(0)
        model.load_state_dict(
            torch.nn.Sequential(
                torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 2)
            ).state_dict()
        )
        opt.state.clear()
        python = _dump(tmp_path / "py", step, monkeypatch, capture="python", steps=2)
        assert _assert_same_rows(python, dump, steps=2) > 50


class _Scale(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.ones(x.shape[-1])  # no autograd node: x does not require grad


@pytest.mark.parametrize(
    "capture", ["python", pytest.param("auto", marks=needs_native, id="native")]
)
def test_backward_ops_belong_to_the_module_whose_op_made_the_node(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capture: str
) -> None:
    """A module whose ops make no autograd node does not take the next module's node."""
    model = torch.nn.Sequential(_Scale(), torch.nn.Linear(3, 2), torch.nn.Tanh())
    x = torch.randn(4, 3)
    dump = _dump(tmp_path / "d", lambda: model(x).sum().backward(), monkeypatch, capture=capture)
    backward = [o for o in _ops(dump) if o.direction == "backward" and o.grad_fn]
    by_node = {o.grad_fn: o.module_path for o in backward}
    assert by_node["TBackward0"] == "Sequential.1"
    assert by_node["AddmmBackward0"] == "Sequential.1"
    assert by_node["TanhBackward0"] == "Sequential.2"
    assert "Sequential.0" not in by_node.values()


def _by_op(ops: list[OpRecord], name: str) -> OpRecord:
    found = [o for o in ops if o.op == name]
    assert found, f"{name} not recorded: {[o.op for o in ops]}"
    return found[0]


def _np_stats(a: np.ndarray) -> tuple[float, float, float, float, int, int, int]:
    """min, max, mean, L2 norm and NaN/+Inf/-Inf counts in float64 (NaN propagates)."""
    x = a.astype(np.float64).reshape(-1)
    with np.errstate(invalid="ignore", over="ignore"):
        norm = float(np.sqrt(np.dot(x, x)))
        counts = (int(np.isnan(x).sum()), int(np.isposinf(x).sum()), int(np.isneginf(x).sum()))
        return (float(x.min()), float(x.max()), float(x.sum() / x.size), norm, *counts)


def _check(row: Any, expected: np.ndarray) -> None:
    got = row.stats
    assert got is not None, row.tensor
    want = _np_stats(expected)
    for f, w in zip(("min", "max", "mean", "norm"), want[:4], strict=True):
        assert _close(getattr(got, f), w), (row.tensor, f, getattr(got, f), w)
    assert (got.nan_count, got.posinf_count, got.neginf_count) == want[4:]


@needs_native
def test_tensor_kinds_are_measured_like_numpy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    torch.manual_seed(1)
    a = torch.randn(64, 48)
    b = torch.randn(48, 64)
    wide = torch.randn(1, 32)
    bad = torch.tensor([1.0, math.nan, math.inf, -math.inf, 2.0])
    inf_only = torch.tensor([1.0, math.inf, -3.0])
    z = torch.randn(8, dtype=torch.complex64)
    half = torch.randn(40).to(torch.bfloat16)
    ints = torch.arange(-5, 30)

    def run() -> None:
        torch.mm(a.t(), b.t())  # non-contiguous inputs, read in place
        wide.expand(16, 32).exp()  # a broadcast view (stride 0): measured through a copy
        bad.abs()
        inf_only.neg()
        z.mul(2)
        half.sin()
        ints.remainder(7)
        torch.cat([a, a + 1])  # a tensor list input
        torch.arange(6.0).unbind(0)  # a tensor list output
        a.mul(0.5)  # a Python number: not a tensor of the op
        torch.empty(0).add(1)  # empty: no statistics

    dump = _dump(tmp_path / "d", run, monkeypatch)
    assert dump.manifest().extra["capture"] == "native"
    ops = _ops(dump)
    mm = _by_op(ops, "aten.mm.default")
    _check(mm.tensors[0], a.t().numpy())
    _check(mm.tensors[1], b.t().numpy())
    _check(mm.tensors[2], (a.t() @ b.t()).numpy())
    exp = _by_op(ops, "aten.exp.default")
    assert exp.tensors[0].shape == (16, 32)
    assert NATIVE is not None
    assert NATIVE.ops.slow_count() >= 1  # the broadcast view's copy
    _check(exp.tensors[0], wide.expand(16, 32).numpy())
    _check(_by_op(ops, "aten.abs.default").tensors[0], bad.numpy())
    _check(_by_op(ops, "aten.neg.default").tensors[1], (-inf_only).numpy())
    mul = [o for o in ops if o.op == "aten.mul.Tensor"]
    assert mul[0].tensors[0].dtype == "complex64"
    _check(mul[0].tensors[0], torch.view_as_real(z).numpy())
    sin = _by_op(ops, "aten.sin.default")
    assert sin.tensors[0].dtype == "bfloat16"
    _check(sin.tensors[0], half.float().numpy())
    _check(_by_op(ops, "aten.remainder.Scalar").tensors[0], ints.numpy())
    cat = _by_op(ops, "aten.cat.default")
    assert [t.tensor for t in cat.tensors] == ["input.0.0", "input.0.1", "output.0"]
    unbind = _by_op(ops, "aten.unbind.int")
    assert [t.tensor for t in unbind.tensors] == ["input.0", *(f"output.{i}" for i in range(6))]
    assert [t.tensor for t in mul[-1].tensors] == ["input.0", "output.0"]
    empty = [o for o in ops if o.op == "aten.add.Tensor"][-1]
    assert empty.tensors[0].shape == (0,)
    assert empty.tensors[0].stats is None


@pytest.mark.parametrize(
    "capture", ["python", pytest.param("auto", marks=needs_native, id="native")]
)
def test_unusual_tensors_never_break_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capture: str
) -> None:
    """Inference, nested, sparse and meta tensors: the ops run and are recorded on both paths
    (nested tensors have no shape and are left out; sparse and meta ones get no statistics)."""
    with warnings.catch_warnings():  # "prototype stage" (once per process)
        warnings.simplefilter("ignore", UserWarning)
        nested = torch.nested.nested_tensor([torch.randn(2, 3), torch.randn(4, 3)])
    sparse = torch.randn(4, 4).relu().to_sparse()
    meta = torch.empty(3, 3, device="meta")

    def run() -> None:
        with torch.inference_mode():
            big = torch.randn(20_000)
            big.mul(2).mul(2)
        nested.relu()
        sparse.mul(2)
        meta.exp()

    dump = _dump(tmp_path / "d", run, monkeypatch, capture=capture)
    assert dump.manifest().extra["capture"] == ("python" if capture == "python" else "native")
    ops = _ops(dump)
    assert not any(o.op == "aten.relu.default" for o in ops)  # its only tensors are nested
    mul = [o for o in ops if o.op == "aten.mul.Tensor"]
    assert mul[0].tensors[0].stats is not None  # inference tensors: measured, not cached
    assert mul[1].tensors[0].stats is not None
    assert math.isclose(mul[1].tensors[0].stats.mean, 2 * mul[0].tensors[0].stats.mean)
    assert mul[-1].tensors[0].stats is None  # sparse: no statistics, like the Python path
    exp = _by_op(ops, "aten.exp.default")
    assert exp.tensors[0].device == "meta"
    assert exp.tensors[0].stats is None


@needs_native
def test_in_place_writes_are_not_served_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    x = torch.ones(20_000)  # above the cache's minimum size

    def run() -> None:
        x.mul(2)
        x.add_(1)
        x.mul(3)

    dump = _dump(tmp_path / "d", run, monkeypatch)
    ops = _ops(dump)
    first, add, second = (o for o in ops if o.op in ("aten.mul.Tensor", "aten.add_.Tensor"))
    assert first.tensors[0].stats.mean == 1.0
    assert (add.tensors[0].stats.mean, add.tensors[-1].stats.mean) == (1.0, 2.0)
    assert second.tensors[0].stats.mean == 2.0
    assert second.tensors[-1].stats.mean == 6.0


@needs_native
def test_views_of_one_tensor_share_a_measurement(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # attention's q/k/v: split -> view -> transpose, none of them dense; then a permuted
    # view of the whole (dense) and a strided slice of other elements
    qkv = torch.arange(4 * 63 * 192 * 3, dtype=torch.float32).reshape(4, 63, 576) / 1e4
    counts: list[int] = []

    def run() -> None:
        before = NATIVE.ops.slow_count()
        q, k, _ = qkv.split(192, dim=2)
        q.view(4, 63, 4, 48).transpose(1, 2).mul(1)  # q's elements again: one copy, reused
        k.mul(1)
        qkv.transpose(0, 1).mul(1)
        qkv[:, ::2, :].mul(1)
        counts.append(NATIVE.ops.slow_count() - before)

    dump = _dump(tmp_path / "d", run, monkeypatch)
    rows = {(o.op, t.tensor): t for o in _ops(dump) for t in o.tensors}
    q, k = qkv.split(192, dim=2)[:2]
    _check(rows["aten.split.Tensor", "output.0"], q.numpy())
    _check(rows["aten.split.Tensor", "output.1"], k.numpy())
    _check(rows["aten.transpose.int", "output.0"], qkv.numpy())
    _check(rows["aten.slice.Tensor", "output.0"], qkv[:, ::2, :].numpy())
    muls = [o for o in _ops(dump) if o.op == "aten.mul.Tensor"]
    _check(muls[0].tensors[0], q.numpy())
    _check(muls[1].tensors[0], k.numpy())
    _check(muls[3].tensors[0], qkv[:, ::2, :].numpy())
    # measured through a copy: q, k, v at the split and the slice, once each (before the
    # cache knew layouts, every view of them was copied again)
    assert counts == [4]


@needs_native
def test_the_cache_forgets_storages_that_died(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # each cached storage's entry kept its (freed) StorageImpl allocated until a pull: left
    # for the whole run, they fragmented the heap (it grew by a step's activations a step)
    sizes: list[int] = []

    def run() -> None:
        for _ in range(50):
            torch.ones(20_000).mul(2)  # above the cache's minimum size; dies at once

    monkeypatch.setenv("TENSORSIGHT_CAPTURE", "auto")
    with tensorsight.dump(tmp_path / "d", mode="statistics") as d:
        for _ in range(3):
            run()
            d.step()
            sizes.append(NATIVE.ops.cache_size())
    assert max(sizes) <= 4  # what is still alive, not 100 dead storages a step


@needs_native
def test_filters_and_other_threads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    x = torch.randn(3, 4)

    def run() -> None:
        other = threading.Thread(target=lambda: torch.randn(5).cos())
        other.start()
        other.join()
        model(x).sum().backward()

    dump = _dump(tmp_path / "d", run, monkeypatch, include=["aten.addmm*", "*.2"])
    ops = _ops(dump)
    assert ops
    assert all(o.op.startswith("aten.addmm") or o.module_path.endswith(".2") for o in ops)
    assert not any(o.op == "aten.cos.default" for o in ops)  # another thread's op
    assert [o.index for o in ops] == list(range(len(ops)))


@needs_native
def test_a_failing_step_keeps_the_ops_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TENSORSIGHT_CAPTURE", "auto")
    x = torch.randn(4)

    def train() -> None:
        with tensorsight.dump(tmp_path / "d") as d:
            x.exp()
            d.step()
            x.sin()
            raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        train()
    dump = read_dump(tmp_path / "d")
    assert not dump.complete
    assert [o.op for o in _ops(dump, 0)] == ["aten.exp.default"]
    assert [o.op for o in _ops(dump, 1)] == ["aten.sin.default"]


@needs_native
def test_long_steps_pull_from_the_module_hooks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_native_capture, "PULL_SECS", 0.0)
    pulls: list[int] = []
    real = _native_capture.NativeOpCapture.pull

    def counting(self: Any) -> None:
        pulls.append(1)
        real(self)

    monkeypatch.setattr(_native_capture.NativeOpCapture, "pull", counting)
    model = torch.nn.Sequential(*(torch.nn.Linear(4, 4) for _ in range(5)))
    dump = _dump(tmp_path / "d", lambda: model(torch.randn(2, 4)).sum().backward(), monkeypatch)
    ops = _ops(dump)
    assert len(pulls) > 3  # mid-step pulls, not only the one at the end
    assert [o.index for o in ops] == list(range(len(ops)))
    forward = [o.module_path for o in ops if o.op == "aten.addmm.default"]
    assert forward == [f"Sequential.{i}" for i in range(5)]


@needs_native
def test_only_one_native_dump_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TENSORSIGHT_CAPTURE", "auto")
    x = torch.randn(3)
    with tensorsight.dump(tmp_path / "outer"), tensorsight.dump(tmp_path / "inner"):
        x.exp()
    assert read_dump(tmp_path / "outer").manifest().extra["capture"] == "native"
    assert read_dump(tmp_path / "inner").manifest().extra["capture"] == "python"
    with tensorsight.dump(tmp_path / "again"):  # the first one is closed: native again
        x.exp()
    assert read_dump(tmp_path / "again").manifest().extra["capture"] == "native"


@pytest.mark.parametrize(
    ("options", "env", "why"),
    [
        ({"mode": "md5"}, "auto", "mode 'statistics' only"),
        ({"stack": True}, "auto", "stack=True"),
        ({"level": "module"}, "auto", "level 'op'"),
        ({}, "python", "TENSORSIGHT_CAPTURE=python"),
    ],
)
def test_the_python_path_records_what_the_native_one_cannot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: dict[str, Any], env: str, why: str
) -> None:
    monkeypatch.setenv("TENSORSIGHT_CAPTURE", env)
    full = {"level": "op", "mode": "statistics", "stack": False, **options}
    assert why in str(_native_capture.native_reason(full))
    x = torch.randn(3)
    with tensorsight.dump(tmp_path / "d", **options):
        x.exp()
    dump = read_dump(tmp_path / "d")
    assert dump.manifest().extra.get("capture", "python") == "python"


def test_no_compiler_falls_back_to_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(_native_capture, "_STATE", {})
    monkeypatch.setattr(_native_capture._cbuild, "build_library", lambda *a, **k: None)
    monkeypatch.setenv("TENSORSIGHT_CAPTURE", "auto")
    options = {"level": "op", "mode": "statistics", "stack": False}
    assert "could not be built" in str(_native_capture.native_reason(options))
    (said,) = [r for r in caplog.records if r.name == _native_capture.__name__]
    assert said.levelname == "WARNING"
    assert "use the Python path (slower)" in said.getMessage()
    x = torch.randn(3)
    with tensorsight.dump(tmp_path / "d"):
        x.exp()
    dump = read_dump(tmp_path / "d")
    assert dump.manifest().extra["capture"] == "python"
    assert [o.op for o in _ops(dump)] == ["aten.exp.default"]


BOTH = ["python", pytest.param("auto", marks=needs_native, id="native")]


@pytest.mark.parametrize("capture", BOTH)
def test_writes_through_data_are_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capture: str
) -> None:
    """A hand-written SGD through ``.data`` (its own version counter on the same storage):
    each update's output and the next forward's read show the new weights."""
    torch.manual_seed(0)
    m = torch.nn.Linear(128, 128)  # 16,384 elements: above the cache's minimum
    x = torch.randn(8, 128)
    truth: list[float] = []

    def step() -> None:
        m.zero_grad()
        m(x).pow(2).mean().backward()
        for p in m.parameters():
            p.data.add_(p.grad.data, alpha=-5.0)
        truth.append(m.weight.double().mean().item())

    dump = _dump(tmp_path / "d", step, monkeypatch, capture=capture, steps=3)
    for st in range(3):
        ops = _ops(dump, st)
        read = next(o for o in ops if o.op == "aten.t.default" and o.direction == "forward")
        update = next(
            o for o in ops if o.op == "aten.add_.Tensor" and o.tensors[0].shape == (128, 128)
        )
        assert math.isclose(update.tensors[-1].stats.mean, truth[st], rel_tol=1e-9)
        if st:
            assert math.isclose(read.tensors[0].stats.mean, truth[st - 1], rel_tol=1e-9)


@pytest.mark.parametrize("capture", BOTH)
def test_writes_into_out_arguments_are_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capture: str
) -> None:
    a, b = torch.ones(20_000), torch.full((20_000,), 2.0)
    c = torch.zeros(20_000)

    def step() -> None:
        c.neg()  # measures c (zeros) and caches it
        torch.add(a, b, out=c)  # c now holds 3
        c.neg()

    ops = _ops(_dump(tmp_path / "d", step, monkeypatch, capture=capture))
    first, last = (o for o in ops if o.op == "aten.neg.default")
    assert first.tensors[0].stats.mean == 0.0
    assert last.tensors[0].stats.mean == 3.0


class _ScaleFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, w)
        return x * w

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, w = ctx.saved_tensors
        return g * w, (g * x).sum(0)


class _ScaleModule(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ScaleFn.apply(x, self.w)  # type: ignore[no-any-return]


@pytest.mark.parametrize("capture", BOTH)
def test_custom_function_backward_keeps_its_module_and_failed_ops_leave_no_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capture: str
) -> None:
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), _ScaleModule())
    x, a, b = torch.randn(3, 4), torch.randn(3, 4), torch.randn(5, 6)

    def step() -> None:
        model(x).sum().backward()
        with pytest.raises(RuntimeError):
            torch.mm(a, b)  # raises inside the op

    ops = _ops(_dump(tmp_path / "d", step, monkeypatch, capture=capture))
    scale = [o for o in ops if o.grad_fn == "_ScaleFnBackward"]
    assert scale
    assert {o.module_path for o in scale} == {"Sequential.1"}
    assert not any(o.op == "aten.mm.default" and o.direction == "forward" for o in ops)


@needs_native
def test_a_module_inside_a_python_op_does_not_pull_mid_op(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A custom op's Python kernel runs a module (whose hooks would pull) while the op runs."""
    monkeypatch.setattr(_native_capture, "PULL_SECS", 0.0)
    inner = torch.nn.Linear(4, 4)

    @torch.library.custom_op("tensorsight_test::apply_inner", mutates_args=())
    def apply_inner(x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return inner(x).clone()

    x = torch.randn(3, 4)

    def step() -> None:
        x.exp()  # an op waiting to be pulled
        y = apply_inner(x)
        y.sin()
        y.cos()

    ops = _ops(_dump(tmp_path / "d", step, monkeypatch))
    assert [o.op for o in ops] == [
        "aten.exp.default", "tensorsight_test.apply_inner.default", "aten.sin.default",
        "aten.cos.default",
    ]  # fmt: skip
    for o in ops:
        assert [t.tensor for t in o.tensors] == ["input.0", "output.0"]
        assert all(t.shape == (3, 4) for t in o.tensors)


@needs_native
def test_closing_on_another_thread_leaves_no_callback_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TENSORSIGHT_CAPTURE", "auto")
    x = torch.randn(4)
    first = tensorsight.dump(tmp_path / "a").start()
    x.exp()
    closer = threading.Thread(target=first.close)
    closer.start()
    closer.join()
    x.sin()  # after close: recorded nowhere
    with tensorsight.dump(tmp_path / "b") as d:
        x.cos()
        d.step()
    assert [o.op for o in _ops(read_dump(tmp_path / "a"))] == ["aten.exp.default"]
    assert [o.op for o in _ops(read_dump(tmp_path / "b"))] == ["aten.cos.default"]
