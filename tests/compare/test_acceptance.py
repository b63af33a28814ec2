"""End to end on real torch runs captured with tensorsight.dump (issue 5 acceptance)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli

torch = pytest.importorskip("torch")

from tensorsight.capture import dump  # noqa: E402
from tensorsight.compare import compare  # noqa: E402

pytestmark = pytest.mark.integration


class _Block(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln = torch.nn.LayerNorm(d)
        self.attn = torch.nn.MultiheadAttention(d, 2, batch_first=True)
        self.ln2 = torch.nn.LayerNorm(d)
        self.mlp = torch.nn.Sequential(
            torch.nn.Linear(d, 4 * d), torch.nn.GELU(), torch.nn.Linear(4 * d, d)
        )

    def forward(self, x):
        h = self.ln(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class TinyTransformer(torch.nn.Module):
    def __init__(self, d=32, n=2):
        super().__init__()
        self.emb = torch.nn.Linear(8, d)
        self.blocks = torch.nn.ModuleList([_Block(d) for _ in range(n)])
        self.head = torch.nn.Linear(d, 1)

    def forward(self, x):
        x = self.emb(x)
        for b in self.blocks:
            x = b(x)
        return self.head(x).mean()


class _GradScale(torch.autograd.Function):
    factor = 1.0

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return g * _GradScale.factor


class _BackwardBugModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(8, 16)
        self.b = torch.nn.Linear(16, 16)
        self.c = torch.nn.Linear(16, 1)

    def forward(self, x):
        h = _GradScale.apply(self.b(torch.relu(self.a(x))))
        return self.c(torch.tanh(h)).sum()


def _capture(path, model, x, *, mode="tensor", autocast=False):
    with dump(path, mode=mode, steps=[0], overwrite=True) as d:
        if autocast:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = model(x)
        else:
            loss = model(x)
        loss.backward()
        d.step()
    model.zero_grad()
    return path


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    root = tmp_path_factory.mktemp("dumps")
    torch.manual_seed(0)
    model = TinyTransformer()
    x = torch.randn(4, 16, 8)
    out = {
        "fp32": _capture(root / "fp32", model, x),
        "bf16": _capture(root / "bf16", model, x, autocast=True),
        "fp32_stats": _capture(root / "fp32_stats", model, x, mode="statistics"),
        "bf16_stats": _capture(root / "bf16_stats", model, x, mode="statistics", autocast=True),
        "fp32_md5": _capture(root / "fp32_md5", model, x, mode="md5"),
    }
    model.blocks[1].ln2.eps = 1.0
    out["lneps"] = _capture(root / "lneps", model, x)
    model.blocks[1].ln2.eps = 1e-5
    ln2, model.blocks[1].ln2 = model.blocks[1].ln2, torch.nn.Identity()
    out["noln"] = _capture(root / "noln", model, x)  # a module missing from the target
    model.blocks[1].ln2 = ln2
    torch.manual_seed(1)
    bw = _BackwardBugModel()
    xb = torch.randn(4, 8)
    out["bw_ok"] = _capture(root / "bw_ok", bw, xb)
    _GradScale.factor = 1.5
    try:
        out["bw_bug"] = _capture(root / "bw_bug", bw, xb)
    finally:
        _GradScale.factor = 1.0
    return out


def test_bf16_autocast_of_a_healthy_model_has_no_error_row(dumps):
    result = compare(dumps["fp32"], dumps["bf16"])
    assert result.first_divergence is None
    assert result.counts["error"] == 0
    bf16_rows = [r for r in result.rows if r.dtype_target == "bfloat16" and r.match != "unmatched"]
    assert len(bf16_rows) > 50  # the bf16 tensors were really compared, and passed
    assert all(r.verdict in ("pass", "warning") for r in bf16_rows)
    # the inserted autocast casts are reported apart, as one-sided, not as warnings
    casts = [r for r in result.rows if r.match == "unmatched"]
    assert casts
    assert all(r.one_sided and "One-sided by design" in r.reason for r in casts)
    assert result.counts["one_sided"] == len(casts)
    assert result.counts["unmatched"] == 0
    assert result.agrees
    summary = result.summary()
    assert f"warning {result.counts['warning']}  error 0  one-sided {len(casts)}" in summary
    assert "(unmatched 0;" in summary


def test_layernorm_eps_bug_is_the_first_divergence(dumps):
    result = compare(dumps["fp32"], dumps["lneps"])
    first = result.first_divergence
    assert first is not None
    assert first.direction == "forward"
    assert first.module_path.endswith("blocks.1.ln2")
    assert "layer_norm" in first.op
    earlier = [r for r in result.rows if r.direction == "forward" and r.index < first.index]
    assert all(r.verdict != "error" for r in earlier)
    # a changed eps is a bug, not rounding: no summation-order or nondeterminism advice
    assert not {a.mechanism for a in result.advice} & {"nondeterminism", "accumulation-order"}


def test_a_missing_module_is_named_in_the_first_divergence(dumps):
    result = compare(dumps["fp32"], dumps["noln"])
    first = result.first_divergence
    assert first is not None
    assert first.direction == "forward"
    assert "ran on one side only before it" in first.reason
    assert "native_layer_norm.default in TinyTransformer.blocks.1.ln2" in first.reason
    assert "a parameter or model input differs" not in first.reason
    one_sided = [r for r in result.rows if r.match == "unmatched" and r.shape_target is None]
    assert any(r.module_path.endswith("blocks.1.ln2") for r in one_sided)


def test_a_divergence_with_equal_inputs_says_it_starts_there(dumps):
    first = compare(dumps["fp32"], dumps["lneps"]).first_divergence
    assert first is not None
    assert "gain xinf" not in first.reason
    if first.input_error == 0:
        assert "its inputs agree" in first.reason


def test_backward_only_bug_is_found_in_backward(dumps):
    result = compare(dumps["bw_ok"], dumps["bw_bug"])
    first = result.first_divergence
    assert first is not None
    assert first.direction == "backward"
    assert all(r.verdict == "pass" for r in result.rows if r.direction == "forward")
    assert first.error_gain is not None
    assert first.error_gain > 100
    assert any(a.mechanism == "scale-error" for a in result.advice)


def test_statistics_dumps_are_compared_on_statistics(dumps):
    same = compare(dumps["fp32_stats"], dumps["fp32_stats"])
    assert {r.mode for r in same.rows} == {"statistics"}
    assert same.counts["error"] == 0
    mixed = compare(dumps["fp32_stats"], dumps["bf16_stats"])
    assert mixed.counts["error"] == 0
    # statistics against tensors: both dumps hold statistics, so that is what is compared
    across = compare(dumps["fp32_stats"], dumps["lneps"])
    assert across.first_divergence is not None
    assert across.first_divergence.module_path.endswith("blocks.1.ln2")


def test_md5_dumps_compare_on_equality(dumps):
    result = compare(dumps["fp32_md5"], dumps["fp32_md5"])
    assert {r.mode for r in result.rows} == {"md5"}
    assert all(r.fingerprint_equal for r in result.rows)


def test_custom_metric_and_metric_selection(dumps):
    from tensorsight.compare.metrics import register_metric

    @register_metric("test_accept_max_target", higher_is_better=False)
    def max_target(bench, target):
        return float(abs(target).max())

    result = compare(dumps["bw_ok"], dumps["bw_bug"], metrics=["cosine", "test_accept_max_target"])
    row = next(r for r in result.rows if r.mode == "tensor")
    assert row.cosine is not None
    assert row.kl_div is None
    assert "test_accept_max_target" in row.custom


def test_cli_exit_codes_and_reports(dumps, tmp_path):
    ok = run_cli("compare", str(dumps["fp32"]), str(dumps["bf16"]), "-q")
    assert ok.returncode == 0, ok.stderr
    out = tmp_path / "report"
    bad = run_cli(
        "compare", str(dumps["fp32"]), str(dumps["lneps"]), "-o", str(out),
        "--format", "csv,xlsx,json,html,node_data",
    )  # fmt: skip
    assert bad.returncode == 1, bad.stderr
    assert "first divergence: aten.native_layer_norm" in bad.stdout
    for name in ("csv", "xlsx", "json", "html", "node_data.json"):
        assert (out / f"comparison.{name}").stat().st_size > 0
    doc = json.loads((out / "comparison.json").read_text(encoding="utf-8"))
    assert doc["rows"][doc["first_divergence"]]["module_path"].endswith("blocks.1.ln2")
    missing = run_cli("compare", str(dumps["fp32"]), str(tmp_path / "nope"))
    assert missing.returncode == 2
    assert missing.stderr.startswith("error: Dump")
    usage = run_cli("compare", str(dumps["fp32"]), str(dumps["bf16"]), "--format", "pdf")
    assert usage.returncode == 2
    assert "--format" in usage.stderr
    metric = run_cli("compare", str(dumps["fp32"]), str(dumps["bf16"]), "--metrics", "cosin")
    assert metric.returncode == 2
    assert "Did you mean 'cosine'" in metric.stderr
    help_ = run_cli("compare", "--help")
    assert help_.returncode == 0
    assert "examples:" in help_.stdout


def test_replay_confirms_bf16_rounding_and_replays_the_planted_bug(dumps):
    from tensorsight.compare.replay import replay
    from tensorsight.errors import CompareError

    result = compare(dumps["fp32"], dumps["bf16"])
    row = next(
        r
        for r in result.rows
        if r.op == "aten.addmm.default" and r.tensor == "output.0" and r.match == "name"
    )
    r = replay(row, dumps["fp32"], dumps["bf16"])
    assert r.dtype == "bfloat16"
    assert r.op_explains_error
    assert r.replay_vs_float64 > 1e-4
    assert r.bench_vs_float64 < 1e-5
    bug = compare(dumps["bw_ok"], dumps["bw_bug"]).first_divergence
    assert bug is not None
    # its non-tensor arguments are in the op table now: the replay runs, and fed the bench's
    # inputs the op does not give the target's output
    planted = replay(bug, dumps["bw_ok"], dumps["bw_bug"])
    assert not planted.op_explains_error
    with pytest.raises(CompareError, match="not a matched output row"):
        replay(next(r for r in result.rows if r.tensor.startswith("input")), dumps["fp32"],
               dumps["bf16"])  # fmt: skip


def test_multi_rank_reports_the_first_divergent_rank(dumps, tmp_path):
    import shutil

    bench, target = tmp_path / "bench", tmp_path / "target"
    for r in (0, 1):
        shutil.copytree(dumps["fp32"] / "rank0", bench / f"rank{r}")
    shutil.copytree(dumps["fp32"] / "rank0", target / "rank0")
    shutil.copytree(dumps["lneps"] / "rank0", target / "rank1")
    result = compare(bench, target)
    assert result.ranks == (0, 1)
    assert result.first_divergence_rank == 1
    assert {r.rank for r in result.rows} == {0, 1}
    only0 = compare(bench, target, rank=0)
    assert only0.first_divergence is None


class _Roll(torch.nn.Module):
    shift = 1

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(6, 6)

    def forward(self, x):
        return torch.roll(self.fc(x), shifts=_Roll.shift, dims=1).sum()


def test_permuted_values_are_named_layout(tmp_path):
    torch.manual_seed(2)
    model, x = _Roll(), torch.randn(5, 6)
    bench = _capture(tmp_path / "a", model, x)
    _Roll.shift = 2
    try:
        target = _capture(tmp_path / "b", model, x)
    finally:
        _Roll.shift = 1
    result = compare(bench, target)
    first = result.first_divergence
    assert first is not None
    assert first.op == "aten.roll.default"
    assert first.mechanism == "layout-transpose"
    assert any(a.mechanism == "layout-transpose" for a in result.advice)


class _BigSum(torch.nn.Module):
    """A reduction long enough that torch splits it across intra-op threads."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(4_000_000))

    def forward(self, x):
        return (x * self.w).sum()


# Whether torch's sum splits across threads in another order depends on its CPU kernel
# (ATen's scalar "default" kernel summed 1 and 2 threads alike here), so the children that
# make the two dumps pin the kernel to AVX2, which every x86-64 CPU of this decade has.
_BIG_SUM_CHILD = """
import sys, torch
sys.path.insert(0, {root!r})
from tests.compare.test_acceptance import _BigSum, _capture
assert torch.backends.cpu.get_cpu_capability() == "AVX2", torch.backends.cpu.get_cpu_capability()
torch.manual_seed(0)
model, x = _BigSum(), torch.randn(4_000_000)
torch.set_num_threads({threads})
_capture({path!r}, model, x)
"""


def _has_avx2() -> bool:
    try:
        with open("/proc/cpuinfo") as f:
            return " avx2 " in f.read()
    except OSError:
        return False


def _capture_big_sum(path, threads):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = str(Path(__file__).parents[2])
    env = {**os.environ, "ATEN_CPU_CAPABILITY": "avx2"}
    code = _BIG_SUM_CHILD.format(root=root, threads=threads, path=str(path))
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=root)
    return path


@pytest.mark.skipif(not _has_avx2(), reason="pins torch's AVX2 sum kernel; this CPU has no AVX2")
def test_thread_count_difference_is_named_as_the_summation_order(tmp_path):
    one = _capture_big_sum(tmp_path / "t1", 1)
    two = _capture_big_sum(tmp_path / "t2", 2)
    assert json.loads((one / "rank0" / "manifest.json").read_text())["extra"]["num_threads"] == 1
    result = compare(one, two)
    assert result.first_divergence is None  # a different summation order is within budget
    total = [r for r in result.rows if r.op == "aten.sum.default" and r.tensor == "output.0"]
    assert total
    assert total[0].error > 0, "the two thread counts summed in the same order"
    assert total[0].input_error == 0
    (hit,) = [a for a in result.advice if a.mechanism == "accumulation-order"]
    assert "num_threads 1 vs 2" in hit.evidence
    assert "aten.sum.default" in hit.evidence
    # the same build with the same settings agrees bit for bit: nothing to explain
    again = compare(two, two)
    assert not [a for a in again.advice if a.mechanism in ("nondeterminism", "accumulation-order")]
