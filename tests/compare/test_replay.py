"""Replay rebuilds each recorded aten call from the op table's ``args`` and reproduces it.

Each case dumps, in tensor mode at level op, a tiny model using the op, replays the op's
row on the dump's own stored inputs and checks the replay gives the recorded output to
float32 tolerance (tensor mode records through the Python path; the native path's ``args``
agree with it, ``tests/capture/test_native_capture.py``). A replay that dropped an argument
(``eps``, ``value=``, ``stride``, ``padding_idx``, ``ignore_index``, ``is_causal``) would not.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import tensorsight
from tensorsight.capture import read_dump
from tensorsight.compare import compare
from tensorsight.compare.replay import replay, replay_recorded
from tensorsight.errors import CompareError

torch = pytest.importorskip("torch")
F = torch.nn.functional


def _layer_norm() -> None:
    torch.nn.LayerNorm(8, eps=0.3)(torch.randn(3, 8)).sqrt()


def _adamw() -> None:
    w = torch.nn.Parameter(torch.randn(6))
    opt = torch.optim.AdamW([w], lr=0.05, foreach=False)
    (w * w).sum().backward()
    opt.step()


def _softmax() -> None:
    torch.randn(3, 5).softmax(dim=0)


def _attention() -> None:
    q, k, v = (torch.randn(1, 2, 4, 8) for _ in range(3))
    F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.7)


def _conv() -> None:
    torch.nn.Conv2d(2, 3, 3, stride=2, padding=1, dilation=1, groups=1)(torch.randn(1, 2, 7, 7))


def _embedding() -> None:
    torch.nn.Embedding(10, 4, padding_idx=0)(torch.tensor([[0, 3, 9], [2, 0, 5]]))


def _cross_entropy() -> None:
    logits = torch.randn(4, 5)
    F.cross_entropy(logits, torch.tensor([1, -100, 4, 0]), ignore_index=-100, reduction="sum")


CASES: list[tuple[str, Callable[[], None], str]] = [
    ("native_layer_norm", _layer_norm, "aten.native_layer_norm.default"),
    ("addcdiv_", _adamw, "aten.addcdiv_.default"),
    ("softmax", _softmax, "aten._softmax.default"),
    ("sdpa", _attention, "aten._scaled_dot_product_flash_attention_for_cpu.default"),
    ("convolution", _conv, "aten.convolution.default"),
    ("embedding", _embedding, "aten.embedding.default"),
    ("log_softmax", _cross_entropy, "aten._log_softmax.default"),
    ("nll_loss", _cross_entropy, "aten.nll_loss_forward.default"),
]


def _dump(path: Path, fn: Callable[[], None], seed: int = 0) -> Path:
    torch.manual_seed(seed)
    with tensorsight.dump(path, mode="tensor"):
        fn()
    return path


@pytest.mark.parametrize(("case", "fn", "op"), CASES, ids=[c[0] for c in CASES])
def test_replay_reproduces_the_recorded_output(tmp_path, case, fn, op):
    path = _dump(tmp_path / case, fn)
    ops = [o for o in read_dump(path).step().ops if o.op == op]
    assert ops, f"{op} not recorded"
    rec = ops[0]
    assert rec.args is not None
    assert rec.args.startswith("{")
    outputs = replay_recorded(path, rec.index)
    assert outputs
    for name, (got, want) in outputs.items():
        scale = max(float(np.abs(want).max()), 1e-30)
        np.testing.assert_allclose(got, want, atol=1e-5 * scale, err_msg=f"{op} {name}")
    # the same call in float64 agrees to float32 rounding
    for name, (got, want) in replay_recorded(path, rec.index, float64=True).items():
        scale = max(float(np.abs(want).max()), 1e-30)
        np.testing.assert_allclose(got, want, atol=1e-4 * scale, err_msg=f"{op} {name} f64")


def _adamw_foreach() -> None:
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 2))
    opt = torch.optim.AdamW(model.parameters(), lr=0.05, foreach=True)
    x = torch.randn(5, 4)
    for _ in range(2):
        opt.zero_grad()
        model(x).square().sum().backward()
        opt.step()


def test_foreach_ops_replay_their_lists(tmp_path):
    """AdamW(foreach=True): list-in, list-out ops. An in-place ``_foreach_*_`` op returns
    nothing; its outputs are the tensors it wrote (``output.<j>`` per list element), recorded
    and replayed as such."""
    path = _dump(tmp_path / "foreach", _adamw_foreach)
    ops = [o for o in read_dump(path).step().ops if o.op.startswith("aten._foreach_")]
    names = {o.op for o in ops}
    assert {"aten._foreach_addcdiv_.ScalarList", "aten._foreach_lerp_.Scalar"} <= names
    assert "aten._foreach_sqrt.default" in names  # out of place: returns a list
    for rec in ops:
        want = [t.tensor for t in rec.inputs if t.tensor.startswith("input.0.")]
        assert [t.tensor for t in rec.outputs] == [f"output.{j}" for j in range(len(want))]
        outputs = replay_recorded(path, rec.index)
        assert sorted(outputs) == sorted(t.tensor for t in rec.outputs), rec.op
        for name, (got, recorded) in outputs.items():
            np.testing.assert_array_equal(got, recorded, err_msg=f"{rec.op} {name}")
    # the last update of the parameters holds their values after the step
    last = [o for o in ops if o.op == "aten._foreach_addcdiv_.ScalarList"][-1]
    step = read_dump(path).step()
    assert float(np.abs(step.load(last.outputs[0]) - step.load(last.inputs[0])).max()) > 0


def test_replay_uses_every_argument(tmp_path):
    """addcdiv_'s value= (the learning-rate step) and the LayerNorm's eps are not dropped."""
    path = _dump(tmp_path / "adamw", _adamw)
    step = read_dump(path).step()
    rec = next(o for o in step.ops if o.op == "aten.addcdiv_.default")
    assert '"value":-0.5' in rec.args  # -lr / (1 - beta1): Adam's first step
    out = replay_recorded(path, rec.index)["output.0"]
    # what the call gives with value left at its default (-> 1) is far from the record
    self_, t1, t2 = (torch.from_numpy(step.load(t).copy()) for t in rec.inputs)
    default = self_.addcdiv_(t1, t2).numpy()
    assert np.abs(default - out[1]).max() > 10 * np.abs(out[0] - out[1]).max() + 1e-3


def test_planted_eps_bug_is_replayed_and_named_as_the_target_op(tmp_path):
    def model(eps: float) -> Callable[[], None]:
        def run() -> None:
            x = torch.randn(4, 8)
            lin = torch.nn.Linear(8, 8)
            torch.nn.LayerNorm(8, eps=eps)(lin(x)).sum()

        return run

    bench = _dump(tmp_path / "bench", model(1e-5))
    target = _dump(tmp_path / "target", model(1.0))
    result = compare(bench, target)
    first = result.first_divergence
    assert first is not None
    assert first.op == "aten.native_layer_norm.default"
    r = replay(first, bench, target)
    # fed the bench inputs with the bench's eps, the op does not give the target's output
    assert not r.op_explains_error
    assert r.target_vs_replay > 0.01
    assert r.bench_vs_float64 < 1e-5


def test_ops_that_cannot_be_replayed_say_why_in_one_line(tmp_path):
    path = _dump(tmp_path / "d", _layer_norm)
    step = read_dump(path).step()
    rec = next(o for o in step.ops if o.op == "aten.native_layer_norm.default")
    from dataclasses import replace

    from tensorsight.compare.replay import call_arguments

    fn = torch.ops.aten.native_layer_norm.default
    cases = {
        None: "non-tensor ones \\(normalized_shape, eps\\)",  # an older dump: no args column
        '{"__omitted__":9000}': "over the dump's limit",
        '{"input":{"tensor":"input.0"},"generator":{"unsupported":"Generator"}}': "not in",
    }
    for args, why in cases.items():
        with pytest.raises(CompareError, match=why) as exc:
            call_arguments(fn, replace(rec, args=args), lambda name: None)
        assert "\n" not in str(exc.value)
    with pytest.raises(CompareError, match=r"tensor input\.0 is not stored") as exc:
        call_arguments(fn, rec, lambda name: None)
    assert "\n" not in str(exc.value)


def test_a_schema_1_dump_without_args_still_reads_and_replay_says_why(tmp_path):
    import json

    pq = pytest.importorskip("pyarrow.parquet")
    path = _dump(tmp_path / "old", _layer_norm)
    table_path = path / "rank0" / "step0" / "ops.parquet"
    table = pq.read_table(table_path)
    pq.write_table(table.drop_columns(["args"]), table_path)  # as version 1 wrote it
    manifest = path / "rank0" / "manifest.json"
    raw = json.loads(manifest.read_text())
    raw["schema_version"] = 1
    manifest.write_text(json.dumps(raw))
    step = read_dump(path).step()
    rec = next(o for o in step.ops if o.op == "aten.native_layer_norm.default")
    assert rec.args is None
    assert rec.outputs[0].data is not None
    with pytest.raises(CompareError, match="older than schema version 2") as exc:
        replay_recorded(path, rec.index)
    assert "\n" not in str(exc.value)
    sqrt = next(o for o in step.ops if o.op == "aten.sqrt.default")
    assert replay_recorded(path, sqrt.index)  # all-tensor ops replay as before
