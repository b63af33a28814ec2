"""transformer: a nanoGPT-sized training step, many small tensors (issue 18).

A GPT written here (token and position embeddings, pre-LayerNorm blocks with biases, causal
attention through ``scaled_dot_product_attention``, a GELU MLP, a tied LM head), random init,
one forward + backward + AdamW step. Two measurements:

1. ``tensorsight compare`` of an fp32 run against a bf16-autocast run, both dumped with
   ``tensorsight.dump(level="op", mode="tensor")`` (~2 x 200 MB, ~2,800 tensors), end to end
   (process start, imports, reports csv+json). The anchor reads the same bytes: a child
   process that imports numpy and reads every shard of both dumps (``numpy.fromfile``) and
   sums it as float32 -- the least any comparison of the stored tensors must do. Goal:
   >= 1 GB/s, bytes of both dumps over the CLI's wall time. msprobe's compare reads only
   msprobe's own dumps, so it cannot be the anchor here: with
   ``TENSORSIGHT_BENCH_BASELINE=<another checkout's src folder>`` the same command of that
   tree runs interleaved with this one (before/after on the same pair and load); without
   it the note repeats the previous figure (:data:`PREVIOUS`).
2. The training step dumped in statistics mode (level op) against the plain step, in
   alternating rounds in this process, the dump's close counted. Goal: <= x1.5. Once in
   wall time per step, once as blocks of steps with the close inside, in the process's CPU
   time (which the machine's load moves much less) and wall time side by side, median,
   quartiles and range of the rounds' ratios.

The machine's load moves wall times: the CPU time (user + sys) of each ``tensorsight
compare`` is noted too, with GB per CPU-second and the load average, and min-of-N ratios
next to the medians.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from benchmarks.bench_dump import _LEFTOVERS, _interleaved
from benchmarks.harness import Harness, python

# Shared by this process and the dump children (kept as source so both build the same model).
MODEL = r"""
import math, torch
from torch import nn
from torch.nn import functional as F

class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))

class GPT(nn.Module):
    def __init__(self, vocab, ctx, d, layers, heads):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.tok.weight

    def forward(self, ids):
        x = self.tok(ids) + self.pos(torch.arange(ids.shape[1]))
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))

def build(quick, bf16=False):
    torch.manual_seed(0)
    vocab, ctx, d, layers, heads, batch = (
        (256, 32, 64, 2, 2, 2) if quick else (1024, 64, 192, 3, 4, 4))
    model = GPT(vocab, ctx, d, layers, heads)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, vocab, (batch, ctx))

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = model(ids[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, vocab), ids[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        return loss

    return model, step
"""

_DUMP = textwrap.dedent(
    """
    import sys, tensorsight
    ns = {}
    exec(sys.argv[1], ns)
    _, step = ns["build"](sys.argv[3] == "1", bf16=sys.argv[4] == "bf16")
    with tensorsight.dump(sys.argv[2], level="op", mode="tensor", steps=[0], overwrite=True) as d:
        step()
        d.step()
    """
)

_READ = textwrap.dedent(
    """
    import sys, numpy as np
    total = 0.0
    for path in sys.argv[1:]:
        raw = np.fromfile(path, dtype=np.uint8)
        n = raw.size // 4 * 4
        total += float(raw[:n].view(np.float32).sum(dtype=np.float64))  # NaNs: fine
    print(total)
    """
)


ANCHOR = "numpy: read + sum every shard (anchor)"
BASELINE = "tensorsight compare, baseline tree (csv+json)"
#: The last figure recorded before this benchmark ran against a baseline tree (CHANGELOG).
PREVIOUS = "0.11 GB/s wall, 0.44 GB per CPU-second (load 12.8 on 2 CPUs)"


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


def _compare(h: Harness, tmp: Path) -> None:
    for side in ("fp32", "bf16"):
        argv = [python(), "-c", _DUMP, MODEL, str(tmp / side), "1" if h.quick else "0", side]
        subprocess.run(argv, check=True, capture_output=True)
    files = _files(tmp / "fp32") + _files(tmp / "bf16")
    size = sum(p.stat().st_size for p in files)
    per_side = {s: sum(p.stat().st_size for p in _files(tmp / s)) for s in ("fp32", "bf16")}
    shards = [str(p) for p in files if p.suffix == ".safetensors"]
    os.sync()
    cpu: list[float] = []
    argv = [
        *(python(), "-m", "tensorsight", "compare", str(tmp / "fp32"), str(tmp / "bf16")),
        *("-q", "-o", str(tmp / "report"), "--format", "csv,json"),
    ]
    # the imports are a third of a compare: time them from bytecode, as an installed package
    # runs (PYTHONDONTWRITEBYTECODE, set in some shells and CI images, would have every run
    # compile tensorsight's modules again), after one run that writes it
    env = {"PYTHONDONTWRITEBYTECODE": ""}
    subprocess.run(argv, check=False, capture_output=True, env={**os.environ, **env})
    base_src = os.environ.get("TENSORSIGHT_BENCH_BASELINE")
    base_env = {**env, "PYTHONPATH": base_src} if base_src else None
    base_argv = [*argv[:-4], "-o", str(tmp / "report_baseline"), *argv[-2:]]
    if base_env is not None:  # its bytecode too
        subprocess.run(base_argv, check=False, capture_output=True, env={**os.environ, **base_env})
    base_cpu: list[float] = []
    for _ in range(h.repeat):  # interleaved, so load from other processes hits both alike
        before = os.times()
        ts = h.measure_command("tensorsight compare (csv+json)", argv, repeat=1, env=env)
        cpu.append(_children_cpu(before))
        if base_env is not None:
            before = os.times()
            bs = h.measure_command(BASELINE, base_argv, repeat=1, env=base_env)
            base_cpu.append(_children_cpu(before))
        anchor = h.measure_command(ANCHOR, [python(), "-c", _READ, *shards], repeat=1)
    h.compare(anchor.label)
    from tensorsight.compare.result import Comparison

    result = Comparison.from_json(tmp / "report" / "comparison.json")
    errors = sum(r.verdict == "error" for r in result.rows)
    gb = size / 1e9
    tensors = {s: _tensor_count(tmp / s) for s in ("fp32", "bf16")}
    h.note(
        f"dumps: GPT fp32 vs bf16 autocast, op level, tensor mode: {size / 1e6:,.0f} MB in "
        f"both ({per_side['fp32'] / 1e6:,.0f} + {per_side['bf16'] / 1e6:,.0f} MB; "
        f"{tensors['fp32']:,} + {tensors['bf16']:,} tensor rows), {len(result.rows):,} rows "
        f"compared, {errors} error rows (healthy run: 0 expected)"
    )
    h.note(
        f"tensorsight compare, wall: {gb / ts.median:.2f} GB/s median, {gb / min(ts.seconds):.2f} "
        f"GB/s fastest (process start and imports included); CPU (user+sys, the report "
        f"writer process included): min {min(cpu):.3f} s = {gb / min(cpu):.2f} GB per "
        f"CPU-second; anchor {gb / anchor.median:.2f} GB/s; load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; goal >= 1 GB/s wall"
    )
    if base_env is None:
        h.note(f"previous figure (no TENSORSIGHT_BENCH_BASELINE given): {PREVIOUS}")
    else:
        h.note(
            f"baseline tree {base_src}: wall {gb / bs.median:.2f} GB/s median (this tree "
            f"{gb / ts.median:.2f}); CPU min {min(base_cpu):.3f} s = {gb / min(base_cpu):.2f} "
            f"GB per CPU-second (this tree {min(cpu):.3f} s = {gb / min(cpu):.2f}), "
            f"interleaved, {len(cpu)} runs each; reports byte for byte the same: "
            f"{_same_reports(tmp / 'report', tmp / 'report_baseline')}"
        )


def _same_reports(a: Path, b: Path) -> bool:
    names = ("comparison.csv", "comparison.json")
    return all((a / n).read_bytes() == (b / n).read_bytes() for n in names)


def _children_cpu(before: os.times_result) -> float:
    """User + system CPU seconds of the children reaped since ``before``."""
    after = os.times()
    return (
        after.children_user - before.children_user + after.children_system
        - before.children_system
    )  # fmt: skip


def _tensor_count(folder: Path) -> int:
    from tensorsight.dumpformat.reader import read_dump

    d = read_dump(folder)
    return sum(len(d.step(r).rows) for r in d.ranks)


def _statistics(h: Harness) -> None:
    ns: dict[str, Any] = {}
    exec(MODEL, ns)  # our own model source, shared with the dump children
    _, step = ns["build"](h.quick)
    rounds, per_round = (2, 3) if h.quick else (max(h.repeat, 3), 10)
    plain, (stats,) = _interleaved(
        h, "GPT", step, rounds, per_round, {"statistics": {"level": "op", "mode": "statistics"}}
    )
    per_step = float(stats.notes["total_with_close"]) / len(stats.seconds)
    h.note(
        f"GPT step, statistics dump ({stats.notes.get('capture', '?')} capture): "
        f"x{stats.median / plain.median:.2f} the plain step (medians), fastest x"
        f"{min(stats.seconds) / min(plain.seconds):.2f}; with each dump's close, per step: "
        f"x{per_step / plain.median:.2f}; rounds [{stats.notes['round_ratios']}]; goal <= x1.5"
    )


def _spread(xs: list[float]) -> str:
    """Median with the quartiles and the extremes: ``x1.32 [1.28-1.37; 1.20-1.60]``."""
    q = statistics.quantiles(xs, n=4) if len(xs) > 1 else [xs[0]] * 3
    return f"x{q[1]:.2f} [IQR {q[0]:.2f}-{q[2]:.2f}; range {min(xs):.2f}-{max(xs):.2f}]"


def _statistics_cpu(h: Harness) -> None:
    """The same comparison as blocks, in CPU time and wall time side by side.

    Each round times a block of plain steps and a block of captured steps in a new dump,
    its close included (the dump's start and one warm step are not timed), in alternating
    order, so that a change in the machine's load hits both alike. The CPU time is the
    process's (``time.process_time``: training, torch's thread pool, the dump's writer
    thread), which other processes' load moves much less than the wall time; each ratio is
    one round's captured block over its plain block, and the note gives the median, the
    quartiles and the extremes of the rounds' ratios, the torch thread count and the load.

    With more than one torch thread, run it with ``OMP_WAIT_POLICY=PASSIVE``: by default
    OpenMP's idle workers spin, and on a loaded machine that spinning (counted as the
    process's CPU time) made the plain step's CPU time ten times its work (915 vs 89 ms).
    """
    import torch

    import tensorsight

    ns: dict[str, Any] = {}
    exec(MODEL, ns)  # our own model source, shared with the dump children
    _, step = ns["build"](h.quick)
    rounds = 3 if h.quick else int(os.environ.get("TENSORSIGHT_BENCH_ROUNDS", "15"))
    per_round = 3 if h.quick else 8
    for _ in range(3):
        step()

    def plain() -> tuple[float, float]:
        w, p = time.perf_counter(), time.process_time()
        for _ in range(per_round):
            step()
        return time.perf_counter() - w, time.process_time() - p

    def captured(folder: str) -> tuple[float, float]:
        d = tensorsight.dump(os.path.join(folder, "d"), level="op", mode="statistics")
        d.start()
        step()  # warm: hooks, caches, writer thread
        d.step()
        w, p = time.perf_counter(), time.process_time()
        for _ in range(per_round):
            step()
            d.step()
        d.close()
        return time.perf_counter() - w, time.process_time() - p

    wall: list[float] = []
    cpu: list[float] = []
    base: list[tuple[float, float]] = []
    for i in range(rounds):
        folder = tempfile.mkdtemp(prefix="bench_transformer_cpu_")
        try:
            if i % 2:
                b, c = plain(), captured(folder)
            else:
                c, b = captured(folder), plain()
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        base.append(b)
        wall.append(c[0] / b[0])
        cpu.append(c[1] / b[1])
    step_wall = statistics.median(b[0] for b in base) / per_round
    step_cpu = statistics.median(b[1] for b in base) / per_round
    policy = os.environ.get("OMP_WAIT_POLICY", "unset")
    h.note(
        f"GPT step, statistics dump, blocks of {per_round} steps with the dump's close, "
        f"{rounds} alternating rounds, {torch.get_num_threads()} torch threads, "
        f"OMP_WAIT_POLICY {policy} (plain step "
        f"{step_wall * 1e3:.0f} ms wall, {step_cpu * 1e3:.0f} ms CPU): CPU (process) "
        f"{_spread(cpu)}; wall {_spread(wall)}; load average "
        f"{' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs; goal <= x1.5"
    )


def run(h: Harness) -> None:
    """Compare the fp32/bf16 pair against a plain read, then the statistics dump's cost."""
    tmp = Path(tempfile.mkdtemp(prefix="bench_transformer_"))
    try:
        t = time.perf_counter()
        _compare(h, tmp)
        h.note(f"(dumps made and compared in {time.perf_counter() - t:.0f} s)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    kept = len(_LEFTOVERS)
    try:
        _statistics(h)
        _statistics_cpu(h)
    finally:  # the statistics dumps (bench_dump keeps them until its run ends)
        for folder in _LEFTOVERS[kept:]:
            shutil.rmtree(folder, ignore_errors=True)
        del _LEFTOVERS[kept:]
