"""Statistics dumps compare like with like: memory no op wrote is never compared.

fp32 against bf16 autocast, statistics mode, a two-block transformer (LayerNorm, attention,
GELU) trained one AdamW step. ``aten.empty`` outputs (uninitialised memory) differed "by
inf" and were errors; they also raised the error every later op was allowed, hiding bugs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import tensorsight
from tensorsight.compare import compare
from tensorsight.compare._unwritten import unwritten_reason
from tensorsight.compare.flow import Origins
from tensorsight.dumpformat.schema import OpRecord, TensorRecord, TensorStats
from tests.conftest import run_cli

torch = pytest.importorskip("torch")


class _Block(torch.nn.Module):
    def __init__(self, d: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(d)
        self.attn = torch.nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln2 = torch.nn.LayerNorm(d)
        self.ff = torch.nn.Sequential(
            torch.nn.Linear(d, 4 * d), torch.nn.GELU(), torch.nn.Linear(4 * d, d)
        )

    def forward(self, x):
        h = self.ln1(x)
        a, _ = self.attn(h, h, h, need_weights=False)
        x = x + a
        return x + self.ff(self.ln2(x))


class _GPT(torch.nn.Module):
    def __init__(self, eps: float) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(64, 32)
        self.blocks = torch.nn.Sequential(_Block(), _Block())
        self.lnf = torch.nn.LayerNorm(32, eps=eps)
        self.head = torch.nn.Linear(32, 64)

    def forward(self, ids):
        e = self.emb(ids)
        staged = torch.empty_like(e).copy_(e)  # fresh memory, then written: a staging buffer
        return self.head(self.lnf(self.blocks(staged)))


def _run(path: Path, *, bf16: bool, eps: float = 1e-5, lr: float = 1e-3) -> Path:
    torch.manual_seed(0)
    model = _GPT(eps)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    ids, target = torch.randint(0, 64, (2, 8)), torch.randint(0, 64, (2, 8))
    with tensorsight.dump(path, mode="statistics"):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            out = model(ids)
        loss = torch.nn.functional.cross_entropy(out.float().view(-1, 64), target.view(-1))
        loss.backward()
        opt.step()
    return path


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    root = tmp_path_factory.mktemp("stats")
    return {
        "fp32": _run(root / "fp32", bf16=False),
        "bf16": _run(root / "bf16", bf16=True),
        "eps": _run(root / "eps", bf16=True, eps=0.5),
    }


def test_uninitialised_memory_is_neutral_and_the_model_reads_healthy(dumps):
    result = compare(dumps["fp32"], dumps["bf16"])
    empty = [r for r in result.rows if r.op.startswith("aten.empty") and r.tensor == "output.0"]
    assert empty  # the staging buffer (and, natively, the attention's)
    assert all(r.verdict == "pass" and "not compared" in r.reason for r in empty)
    overwritten = [r for r in result.rows if r.op == "aten.copy_.default" and r.tensor == "input.0"]
    assert overwritten
    assert all(r.verdict == "pass" and "not compared" in r.reason for r in overwritten)
    # the model's ops (everything before the optimizer step) have no error row
    errors = [r for r in result.rows if r.verdict == "error"]
    assert {r.op for r in errors} <= {"aten.addcdiv_.default"}, [
        (r.op, r.module_path, r.reason) for r in errors
    ]


def test_fp32_vs_bf16_statistics_has_no_error_row(dumps):
    result = compare(dumps["fp32"], dumps["bf16"])
    assert [r for r in result.rows if r.verdict == "error"] == []
    assert run_cli("compare", str(dumps["fp32"]), str(dumps["bf16"])).returncode == 0
    # AdamW's update on zero-gradient bias entries: said, not hidden
    divisions = [r for r in result.rows if r.verdict == "warning" and "ill-conditioned" in r.reason]
    assert divisions
    assert {r.op for r in divisions} == {"aten.addcdiv_.default"}
    assert all("mode='tensor'" in r.reason for r in divisions)


def test_planted_learning_rate_bug_is_named_at_the_update_in_statistics_mode(tmp_path):
    """The inputs of the update agree (fp32 both sides): the division's conditioning
    excuses nothing, and every op that uses the 10x learning rate is an error."""
    bench = _run(tmp_path / "bench", bf16=False)
    target = _run(tmp_path / "target", bf16=False, lr=1e-2)
    result = compare(bench, target)
    first = result.first_divergence
    assert first is not None
    assert first.op == "aten.mul_.Tensor"  # AdamW's decoupled weight decay, the first use of lr
    updates = [r for r in result.rows if r.op == "aten.addcdiv_.default" and r.tensor == "output.0"]
    assert updates
    assert not [r for r in updates if r.verdict == "warning"]  # nothing excused
    # all but the embedding, whose unused rows get no update and whose error is inherited
    assert len([r for r in updates if r.verdict == "error"]) == len(updates) - 1


def test_planted_layernorm_eps_bug_is_named_in_statistics_mode(dumps):
    first = compare(dumps["fp32"], dumps["eps"]).first_divergence
    assert first is not None
    assert (first.op, first.module_path, first.direction) == (
        "aten.native_layer_norm.default",
        "_GPT.lnf",
        "forward",
    )


@pytest.mark.parametrize(
    ("op", "tensor", "neutral"),
    [
        ("aten.empty.memory_format", "output.0", True),
        ("aten.empty_like.default", "output.0", True),
        ("aten.new_empty_strided.default", "output.0", True),
        ("Torch.empty.0.forward", "output.0", True),  # msprobe's name
        ("aten.copy_.default", "input.0", True),  # overwritten, never read
        ("aten.copy_.default", "input.1", False),
        ("aten.copy_.default", "output.0", False),
        ("aten.add.out", "input.out", True),
        ("aten.add_.Tensor", "input.0", False),  # read, then written
        ("aten.empty.memory_format", "input.0", False),
    ],
)
def test_which_tensors_hold_no_computed_values(op, tensor, neutral):
    assert (unwritten_reason(op, tensor) is not None) is neutral


def _op(index: int, op: str, rows: dict[str, tuple[float, float]]) -> OpRecord:
    """An op whose rows hold tensors of 8 float32 elements with the given (min, max)."""
    tensors = tuple(
        TensorRecord(
            index, op, "forward", "", name, (8,), "float32",
            stats=TensorStats(min=lo, max=hi, mean=(lo + hi) / 2, norm=abs(hi) + abs(lo)),
        )
        for name, (lo, hi) in rows.items()
    )  # fmt: skip
    return OpRecord(index, op, "forward", "", tensors)


def test_memory_no_op_wrote_is_followed_through_views_until_written():
    """nn.Linear's weight: empty -> detach (the Parameter) -> uniform_ (the initialiser)."""
    garbage, init, other = (-3e36, 5e36), (-0.3, 0.3), (-1.0, 2.0)
    ops = [
        _op(0, "aten.empty.memory_format", {"output.0": garbage}),
        _op(1, "aten.detach.default", {"input.0": garbage, "output.0": garbage}),
        _op(2, "aten.uniform_.default", {"input.0": garbage, "output.0": init}),
        _op(3, "aten.t.default", {"input.0": init, "output.0": init}),
        _op(4, "aten.sum.default", {"input.0": garbage, "output.0": other}),
    ]
    flow = Origins(ops, ops)
    unwritten = {
        (op.index, t.tensor) for op in ops for t in op.tensors
        if flow.unwritten(op.index, op.index, t.tensor)
    }  # fmt: skip
    assert unwritten == {
        (0, "output.0"), (1, "input.0"), (1, "output.0"), (2, "input.0"), (4, "input.0")
    }  # fmt: skip
    assert flow.unwritten(1, None, "input.0") == "aten.empty.memory_format"
