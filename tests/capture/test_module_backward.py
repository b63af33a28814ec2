"""Level module records each module's own backward values, checked against autograd.

A module's ``output.*`` backward rows are the gradients it sends to its inputs (msprobe's
convention), ``input.*`` those it receives. The references come from ``torch.autograd.grad``
on the same model, so what is checked is the module's share of each gradient: a tensor also
used outside the module (a residual) gets other gradients too, and autograd adds them into
the same buffer in place.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import tensorsight
from tensorsight.capture import read_dump
from tensorsight.compare import compare

torch = pytest.importorskip("torch")

MODES = ("statistics", "tensor", "md5")


class Residual(torch.nn.Module):
    """``h + ln(h)``: h's gradient is the residual's plus the LayerNorm's."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)
        self.ln = torch.nn.LayerNorm(8)

    def forward(self, x):
        h = self.fc(x)
        return h + self.ln(h)


class Shared(torch.nn.Module):
    """One Linear called twice on one input."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        return self.lin(x) * self.lin(x).tanh()


class InPlace(torch.nn.Module):
    """A ReLU writing into its input, whose result feeds a residual."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)
        self.act = torch.nn.ReLU(inplace=True)
        self.fc2 = torch.nn.Linear(8, 8)

    def forward(self, x):
        r = self.act(self.fc(x))
        return r + self.fc2(r)


def _data(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(4, 8, generator=g, requires_grad=True), torch.randn(4, 8, generator=g)


def _dump(tmp_path: Path, model: torch.nn.Module, mode: str) -> list:
    x, w = _data()
    with tensorsight.dump(tmp_path / mode, level="module", mode=mode):
        (model(x) * w).sum().backward()
    step = read_dump(tmp_path / mode).step()
    return [(op, step) for op in step.ops if op.direction == "backward" and "param" not in op.op]


def _check(op, step, mode: str, expected: dict[str, torch.Tensor]) -> None:
    rows = {t.tensor: t for t in op.tensors}
    assert sorted(rows) == sorted(expected), op
    for name, ref in expected.items():
        row = rows[name]
        ref64 = ref.detach().double()
        assert row.stats is not None
        assert row.stats.norm == pytest.approx(ref64.norm().item(), rel=1e-5, abs=1e-9), name
        assert row.stats.max == pytest.approx(ref64.max().item(), rel=1e-5, abs=1e-9), name
        if mode == "tensor":
            scale = float(ref64.abs().max())  # float32 rounding of sums formed in another order
            np.testing.assert_allclose(step.load(row), ref.detach().numpy(), atol=1e-6 * scale)


def _one(ops, path: str):
    found = [(op, step) for op, step in ops if op.module_path == path]
    assert len(found) == 1, [o.module_path for o, _ in ops]
    return found[0]


@pytest.mark.parametrize("mode", MODES)
def test_residual_records_the_layernorm_share_of_the_gradient(tmp_path, mode):
    torch.manual_seed(0)
    model = Residual()
    ops = _dump(tmp_path, model, mode)
    x, w = _data()
    h = model.fc(x)
    o_ln = model.ln(h)
    loss = ((h + o_ln) * w).sum()
    g_h, g_x = torch.autograd.grad(loss, [h, x], retain_graph=True)
    (g_ln,) = torch.autograd.grad(o_ln, h, w)
    # the LayerNorm's share is not h's total gradient: the bug this guards against
    assert (g_h - g_ln).norm() > 0.3 * g_h.norm()
    _check(*_one(ops, "Residual.ln"), mode, {"input.0": w, "output.0": g_ln})
    _check(*_one(ops, "Residual.fc"), mode, {"input.0": g_h, "output.0": g_x})
    _check(*_one(ops, "Residual"), mode, {"input.0": w, "output.0": g_x})


@pytest.mark.parametrize("mode", MODES)
def test_shared_module_records_each_call_apart(tmp_path, mode):
    torch.manual_seed(0)
    model = Shared()
    ops = _dump(tmp_path, model, mode)
    x, w = _data()
    a, b = model.lin(x), model.lin(x)
    t = b.tanh()
    g_a, g_b = torch.autograd.grad((a * t * w).sum(), [a, b], retain_graph=True)
    (gx_a,) = torch.autograd.grad(a, x, g_a, retain_graph=True)
    (gx_b,) = torch.autograd.grad(b, x, g_b)
    calls = [(op, step) for op, step in ops if op.module_path == "Shared.lin"]
    assert len(calls) == 2
    norms = {round(float(g.norm()), 4): (g, gx) for g, gx in ((g_a, gx_a), (g_b, gx_b))}
    for op, step in calls:
        g, gx = norms[round(op.tensors[0].stats.norm, 4)]
        _check(op, step, mode, {"input.0": g, "output.0": gx})


@pytest.mark.parametrize("mode", MODES)
def test_module_writing_into_its_input_records_its_own_gradient(tmp_path, mode):
    torch.manual_seed(0)
    model = InPlace()
    ops = _dump(tmp_path, model, mode)
    x, w = _data()
    h = model.fc(x)
    r = torch.relu(h)  # same values and gradients as the in-place ReLU
    loss = ((r + model.fc2(r)) * w).sum()
    g_r, g_h, g_x = torch.autograd.grad(loss, [r, h, x])
    _check(*_one(ops, "InPlace.act"), mode, {"input.0": g_r, "output.0": g_h})
    _check(*_one(ops, "InPlace.fc"), mode, {"input.0": g_h, "output.0": g_x})
    _check(*_one(ops, "InPlace.fc2"), mode, {"input.0": w, "output.0": g_r - w})


def test_gradients_reach_inputs_as_without_the_dump(tmp_path):
    """Aliasing module inputs changes no gradient the user sees."""
    for cls in (Residual, Shared, InPlace):
        torch.manual_seed(0)
        model = cls()
        x, w = _data()
        (model(x) * w).sum().backward()
        want = [x.grad.clone(), *(p.grad.clone() for p in model.parameters())]
        model.zero_grad()
        x, w = _data()
        with tensorsight.dump(tmp_path / cls.__name__, level="module"):
            (model(x) * w).sum().backward()
        got = [x.grad, *(p.grad for p in model.parameters())]
        for a, b in zip(want, got, strict=True):
            torch.testing.assert_close(a, b, rtol=0, atol=0)


def _msprobe_l0(path: Path, model: torch.nn.Module, x, w) -> None:
    """An msprobe-L0-style statistics dump: full backward hooks on every submodule."""
    data: dict[str, dict] = {}
    counts: dict[str, int] = {}

    def stat(t):
        if not isinstance(t, torch.Tensor):
            return None
        d = t.detach().double()
        return {
            "type": "torch.Tensor", "dtype": str(t.dtype), "shape": list(t.shape),
            "Max": d.max().item(), "Min": d.min().item(), "Mean": d.mean().item(),
            "Norm": d.norm().item(), "requires_grad": t.requires_grad,
        }  # fmt: skip

    handles = []
    for name, mod in model.named_modules():
        if not name:
            continue
        prefix = f"Module.{name}.{type(mod).__name__}"

        def fwd(m, args, out, prefix=prefix):
            n = counts[prefix] = counts.get(prefix, -1) + 1
            data[f"{prefix}.forward.{n}"] = {
                "input_args": [stat(a) for a in args], "input_kwargs": {}, "output": [stat(out)],
            }  # fmt: skip

        def bwd(m, grad_input, grad_output, prefix=prefix):
            n = counts[prefix]
            data[f"{prefix}.backward.{n}"] = {
                "input": [stat(g) for g in grad_output], "output": [stat(g) for g in grad_input],
            }  # fmt: skip

        handles.append(mod.register_forward_hook(fwd))
        handles.append(mod.register_full_backward_hook(bwd))
    (model(x) * w).sum().backward()
    for h in handles:
        h.remove()
    folder = path / "step0" / "proc1"
    folder.mkdir(parents=True)
    doc = {"task": "statistics", "level": "L0", "framework": "pytorch", "dump_data_dir": None}
    (folder / "dump.json").write_text(json.dumps({**doc, "data": data}))


def test_msprobe_l0_and_module_dump_of_one_residual_run_agree(tmp_path):
    torch.manual_seed(0)
    model = Residual()
    x, w = _data()
    _msprobe_l0(tmp_path / "msprobe", model, x, w)
    x, w = _data()
    with tensorsight.dump(tmp_path / "ours", level="module"):
        (model(x) * w).sum().backward()
    result = compare(tmp_path / "msprobe", tmp_path / "ours")
    matched = [r for r in result.rows if r.match != "unmatched"]
    backward = [r for r in matched if r.direction == "backward" and ".backward" in r.op]
    assert {r.op for r in backward} == {
        "Module.fc.Linear.backward.0",
        "Module.ln.LayerNorm.backward.0",
    }
    assert len(backward) == 4
    assert [r for r in matched if r.verdict == "error"] == []
    ln_out = next(r for r in backward if "ln" in r.op and r.tensor == "output.0")
    assert ln_out.norm_rel_diff == pytest.approx(0.0, abs=1e-6)
