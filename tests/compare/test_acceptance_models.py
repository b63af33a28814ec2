"""Issue 18 acceptance, tensor and statistics modes: healthy fp32-vs-bf16 AdamW steps of
three transformer families read healthy; planted bugs are the first divergence at their op
and module; inputs with no recorded producer are "unknown origin", never "a parameter differs".

Models: tiny random-init ``transformers`` configs (GPT-2, Llama, BERT; nothing downloaded)
and a GPT-style model written here, where the bugs are planted. Each run is one forward,
backward and ``torch.optim.AdamW`` step under ``tensorsight.dump(mode="tensor")`` (or
``"statistics"``, where nothing can be replayed); the bf16 runs use
``torch.autocast("cpu", dtype=torch.bfloat16)``.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from pathlib import Path

import pytest

from tests.conftest import run_cli

torch = pytest.importorskip("torch")

from tensorsight.capture import dump  # noqa: E402
from tensorsight.compare import compare  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.slow]

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

VOCAB, SEQ, D = 64, 12, 32


def _hf(family: str) -> torch.nn.Module:
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    common = {"vocab_size": VOCAB}
    if family == "gpt2":
        cfg = transformers.GPT2Config(
            n_embd=D, n_layer=2, n_head=2, n_positions=16, attn_pdrop=0.0, embd_pdrop=0.0,
            resid_pdrop=0.0, bos_token_id=0, eos_token_id=0, **common,
        )  # fmt: skip
        return transformers.GPT2LMHeadModel(cfg)
    if family == "llama":
        cfg = transformers.LlamaConfig(
            hidden_size=D, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
            num_key_value_heads=2, max_position_embeddings=16, bos_token_id=0, eos_token_id=0,
            **common,
        )  # fmt: skip
        return transformers.LlamaForCausalLM(cfg)
    cfg = transformers.BertConfig(
        hidden_size=D, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
        max_position_embeddings=16, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
        **common,
    )  # fmt: skip
    return transformers.BertForMaskedLM(cfg)


class _WrongGrad(torch.autograd.Function):
    """Identity forward; backward scales the gradient (a bug only in backward)."""

    @staticmethod
    def forward(ctx, x):  # type: ignore[override]
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):  # type: ignore[override]
        return g * 1.5


class _Attention(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.qkv = torch.nn.Linear(D, 3 * D)
        self.proj = torch.nn.Linear(D, D)
        self.heads = 2
        self.unsafe_softmax = False  # planted: exp / sum without subtracting the max
        self.scale_bug = False  # planted: 1 / d_head instead of 1 / sqrt(d_head)
        self.transposed = False  # planted: the output projection's weight transposed
        self.register_buffer("mask", torch.tril(torch.ones(SEQ, SEQ)).bool())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        dh = c // self.heads
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, dh).transpose(1, 2) for z in (q, k, v))
        scale = 1.0 / dh if self.scale_bug else 1.0 / math.sqrt(dh)
        att = (q @ k.transpose(-2, -1)) * scale
        att = att.masked_fill(~self.mask[:t, :t], float("-inf"))
        if self.unsafe_softmax:
            e = torch.exp(att)
            att = e / e.sum(dim=-1, keepdim=True)
        else:
            att = torch.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, c)
        w = self.proj.weight.t() if self.transposed else self.proj.weight
        return torch.nn.functional.linear(y, w, self.proj.bias)


class _Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(D)
        self.attn = _Attention()
        self.ln2 = torch.nn.LayerNorm(D)
        self.fc = torch.nn.Linear(D, 4 * D)
        self.out = torch.nn.Linear(4 * D, D)
        self.wrong_grad = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        h = torch.nn.functional.gelu(self.fc(self.ln2(x)))
        if self.wrong_grad:
            h = _WrongGrad.apply(h)
        return x + self.out(h)


class TinyGPT(torch.nn.Module):
    """GPT-style: token and position embeddings, pre-norm blocks with biases, tied head."""

    def __init__(self) -> None:
        super().__init__()
        self.wte = torch.nn.Embedding(VOCAB, D)
        self.wpe = torch.nn.Embedding(SEQ, D)
        self.blocks = torch.nn.ModuleList([_Block() for _ in range(2)])
        self.ln_f = torch.nn.LayerNorm(D)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.wte(ids) + self.wpe(torch.arange(ids.shape[1]))
        for block in self.blocks:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.t()
        return torch.nn.functional.cross_entropy(logits.flatten(0, 1), ids.flatten())


def _ids() -> torch.Tensor:
    return torch.randint(0, VOCAB, (2, SEQ), generator=torch.Generator().manual_seed(1))


def _step(
    path: Path, model: torch.nn.Module, *, bf16: bool, hf: bool, mode: str = "tensor"
) -> Path:
    """One forward + backward + AdamW step, recorded in ``mode``."""
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = _ids()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # transformers' deprecation notices
        with dump(path, mode=mode, steps=[0], overwrite=True) as d:
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                loss = model(input_ids=ids, labels=ids).loss if hf else model(ids)
            loss.backward()
            opt.step()
            opt.zero_grad()
            d.step()
    return path


def _fresh(family: str) -> torch.nn.Module:
    torch.manual_seed(0)
    return TinyGPT() if family == "tinygpt" else _hf(family)


def _healthy_runs(root: Path, mode: str) -> dict[str, Path]:
    out = {}
    for family in ("gpt2", "llama", "bert", "tinygpt"):
        for bf16 in (False, True):
            name = f"{family}_{'bf16' if bf16 else 'fp32'}"
            hf = family != "tinygpt"
            out[name] = _step(root / name, _fresh(family), bf16=bf16, hf=hf, mode=mode)
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Healthy fp32 and bf16 runs of each family (fresh, identically seeded models)."""
    return _healthy_runs(tmp_path_factory.mktemp("models"), "tensor")


@pytest.mark.parametrize("family", ["gpt2", "llama", "bert", "tinygpt"])
def test_healthy_bf16_autocast_adamw_step_has_no_error_row(
    runs: dict[str, Path], family: str, tmp_path: Path
) -> None:
    bench, target = runs[f"{family}_fp32"], runs[f"{family}_bf16"]
    proc = run_cli("compare", str(bench), str(target), "-o", str(tmp_path), "-q")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(next(tmp_path.glob("*.json")).read_text())
    verdicts = [r["verdict"] for r in report["rows"]]
    assert verdicts.count("error") == 0
    assert report["first_divergence"] is None
    matched = [r for r in report["rows"] if r["match"] != "unmatched"]
    assert sum(r["dtype_target"] == "bfloat16" for r in matched) > 50  # bf16 really compared
    # the optimizer ran and was judged (its ops are recorded after the backward pass)
    assert any(r["op"].startswith("aten.addcdiv") for r in matched)


@pytest.fixture(scope="module")
def stat_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The runs of :func:`runs`, recorded in statistics mode."""
    return _healthy_runs(tmp_path_factory.mktemp("stat_models"), "statistics")


@pytest.mark.parametrize("family", ["gpt2", "llama", "bert", "tinygpt"])
def test_healthy_bf16_statistics_have_no_error_row(stat_runs: dict[str, Path], family: str) -> None:
    """Statistics cannot replay: AdamW's sqrt(v) passes by its reproduced min and max,
    and what only the tensors could settle (a division by eps, a key-bias gradient that is 0
    in exact arithmetic) is a warning that says so, never an error."""
    result = compare(stat_runs[f"{family}_fp32"], stat_runs[f"{family}_bf16"])
    errors = [(r.index, r.op, r.tensor, r.reason) for r in result.rows if r.verdict == "error"]
    assert errors == []
    assert result.first_divergence is None
    for r in result.rows:
        if r.verdict == "warning" and "ill-conditioned" in r.reason:
            assert "mode='tensor'" in r.reason


@pytest.mark.parametrize(
    ("plant", "op", "module", "direction"),
    [
        ("eps", "native_layer_norm", "blocks.1.ln2", "forward"),
        ("transposed", "aten.addmm.default", "blocks.1.attn", "forward"),
        ("scale", "aten.mul.Tensor", "blocks.1.attn", "forward"),
        ("backward", "aten.gelu_backward.default", "blocks.1", "backward"),
    ],
)
def test_planted_bug_is_the_first_divergence_in_statistics_mode(
    stat_runs: dict[str, Path], tmp_path: Path, plant: str, op: str, module: str, direction: str
) -> None:
    target = _step(tmp_path / plant, _plant(plant), bf16=True, hf=False, mode="statistics")
    first = compare(stat_runs["tinygpt_fp32"], target).first_divergence
    assert first is not None, plant
    assert op in first.op, (plant, first.op)
    assert first.direction == direction, (plant, first)
    assert first.module_path.endswith(module), (plant, first.module_path)
    if plant == "eps":  # the recorded arguments name the bug
        assert "its arguments differ: eps=1e-05 (bench) vs eps=1 (target)" in first.reason


def test_sign_like_adam_updates_are_inherited_not_errors(runs: dict[str, Path]) -> None:
    result = compare(runs["gpt2_fp32"], runs["gpt2_bf16"])
    updates = [r for r in result.rows if r.op == "aten.addcdiv_.default" and r.tensor == "output.0"]
    assert updates
    steep = [r for r in updates if r.budget is not None and (r.error or 0) > r.budget]
    # GPT-2's key biases get a gradient that is ~0 (softmax ignores them): Adam's first step
    # is sign-like there, and the runs' updates differ far beyond the normwise budget
    assert steep
    for r in steep:
        assert r.verdict == "pass"
        assert "reproduces the target's output" in r.reason
        assert "ill-conditioned" in r.reason


def _plant(plant: str) -> torch.nn.Module:
    """A fresh TinyGPT with one bug planted in its second block."""
    model = _fresh("tinygpt")
    block = model.blocks[1]
    if plant == "eps":
        block.ln2.eps = 1.0
    elif plant == "transposed":
        block.attn.transposed = True
    elif plant == "softmax":
        block.attn.unsafe_softmax = True
        with torch.no_grad():  # large logits in this block, on both sides
            block.attn.qkv.weight[: 2 * D].mul_(12.0)
    elif plant == "scale":
        block.attn.scale_bug = True
    elif plant == "backward":
        block.wrong_grad = True
    return model


def _planted(tmp: Path, runs: dict[str, Path], plant: str) -> object:
    model = _plant(plant)
    target = _step(tmp / plant, model, bf16=True, hf=False)
    bench = runs["tinygpt_fp32"]
    if plant == "softmax":  # the bench needs the same large logits
        healthy = _fresh("tinygpt")
        with torch.no_grad():
            healthy.blocks[1].attn.qkv.weight[: 2 * D].mul_(12.0)
        bench = _step(tmp / "softmax_bench", healthy, bf16=False, hf=False)
    return compare(bench, target)


@pytest.mark.parametrize(
    ("plant", "op", "module", "direction"),
    [
        ("eps", "native_layer_norm", "blocks.1.ln2", "forward"),
        ("transposed", "aten.t.default", "blocks.1.attn", "forward"),
        ("softmax", "aten.bmm.default", "blocks.1.attn", "forward"),
        ("scale", "aten.mul.Tensor", "blocks.1.attn", "forward"),
        ("backward", "aten.gelu_backward.default", "blocks.1", "backward"),
    ],
)
def test_planted_bug_is_the_first_divergence(
    runs: dict[str, Path], tmp_path: Path, plant: str, op: str, module: str, direction: str
) -> None:
    result = _planted(tmp_path, runs, plant)
    first = result.first_divergence  # type: ignore[attr-defined]
    assert first is not None, plant
    assert first.direction == direction, (plant, first)
    assert first.module_path.endswith(module), (plant, first.module_path, first.op)
    assert op in first.op, (plant, first.op)
    before = [
        r
        for r in result.rows  # type: ignore[attr-defined]
        if r.direction == direction and (r.index or 0) < first.index and r.verdict == "error"
    ]
    assert not before
    mechanisms = {a.mechanism for a in result.advice}  # type: ignore[attr-defined]
    if plant == "transposed":  # the weight reaches the matmul transposed: the layout advice
        assert "layout-transpose" in mechanisms
        assert "data flows part" in first.reason
    if plant == "softmax":  # exp overflows without the max subtracted
        assert "NaN/Inf" in first.reason
        assert "first-nan" in mechanisms
    if plant == "scale":
        assert "scale-error" in mechanisms
    if plant == "eps":
        assert "its arguments differ: eps=1e-05 (bench) vs eps=1 (target)" in first.reason
    if plant == "backward":  # the gradient comes from the wrong backward's multiplication
        assert "aten.mul.Tensor" in first.reason


def test_a_rewritten_softmax_pairs_by_data_flow_not_by_name(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    """Issue 18 item 5: the bench's detach of the probabilities is no counterpart of the
    target's detach of the unnormalised exp, although op, module and shape agree."""
    model = _fresh("tinygpt")
    model.blocks[1].attn.unsafe_softmax = True  # mathematically the same softmax
    result = compare(
        runs["tinygpt_fp32"], _step(tmp_path / "rewritten", model, bf16=True, hf=False)
    )
    assert result.counts["error"] == 0
    detach = [
        r
        for r in result.rows
        if r.op == "aten.detach.default" and r.module_path.endswith("blocks.1.attn")
        and r.direction == "forward"
    ]  # fmt: skip
    assert detach
    assert all(r.match == "unmatched" for r in detach)
    assert any("No credible counterpart" in r.reason for r in detach)
    # the probabilities still meet where both sides use them: the matmul with v
    bmm = [
        r for r in result.rows
        if r.op == "aten.bmm.default" and r.module_path.endswith("blocks.1.attn")
        and r.direction == "forward" and r.tensor == "output.0"
    ]  # fmt: skip
    assert bmm
    assert all(r.match != "unmatched" and r.verdict == "pass" for r in bmm)


def test_inputs_of_a_partial_dump_have_unknown_origin_not_a_differing_parameter(
    tmp_path: Path,
) -> None:
    """Issue 18 item 2: a dump that leaves out the model (only the optimizer and the ops
    outside every module) feeds the optimizer gradients no recorded op produced."""

    def run(path: Path, bf16: bool) -> Path:
        model = _fresh("tinygpt")
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        with dump(path, mode="tensor", steps=[0], exclude=["TinyGPT*"]) as d:
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                loss = model(_ids())
            loss.backward()
            opt.step()
            d.step()
        return path

    bench, target = run(tmp_path / "fp32", False), run(tmp_path / "bf16", True)
    result = compare(bench, target)
    assert result.counts["error"] == 0
    unknown = [r for r in result.rows if "unknown origin" in (r.reason or "")]
    assert unknown
    assert all(r.verdict == "warning" and "parameter" not in r.reason for r in unknown)
    proc = run_cli("compare", str(bench), str(target), "-q")
    assert proc.returncode == 0, proc.stdout + proc.stderr
