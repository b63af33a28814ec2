"""Dumping a training step: tensorsight.dump vs msprobe (mindstudio-probe) vs the plain step.

Models: a 50-layer 1024-wide MLP (batch 64, SGD step) and a tiny CNN (two convs, batch 8,
32x32). Each case times one training step (forward, backward, optimizer step) plus
``.step()`` of the dump; the dump is closed (writer drained) after the timed steps and
that drain is timed separately for tensor mode. msprobe runs in a child process (the
interpreter named by ``MSPROBE_PYTHON``, else this one with ``$MSPROBE_PYTHONPATH`` on its
path, else this one if ``import msprobe`` works) that times its own plain step and its
captured steps, so each tool's overhead is measured against a plain step in the same
process.

The statistics and md5 dumps (and msprobe's) are kept until the run ends: on ext4 without a
journal, deleting them between rounds made the next rounds' file creation up to a
millisecond slower per file (the run notes what creating a step folder cost before and
after the statistics runs).

``dd`` measures the disk's sequential write speed (``conv=fdatasync``) in the same run, twice:
writing 1 GiB (the first figure; on a machine with much free memory this is mostly the speed
of the page cache) and writing as many bytes as the tensor-mode dump wrote (the disk's
sustained speed for that volume); then the same volume with ``oflag=direct`` (4 MiB blocks
past the page cache, as the dump writes large tensors), and the tensor-mode rate is also
given against the faster of the two. The tensor-mode rate is the dump's bytes over its time
beyond the plain steps, with the dump's files fdatasync'd before the clock stops, so that
both sides count getting the bytes onto the disk.

Goals (issue 4): statistics mode <= 1.5x the plain step on the MLP and <= 3x on the tiny
CNN; tensor mode writes at >= 70 % of dd's speed. Statistics dumps at level op use the native
(C++) capture where it is available; the tiny CNN is also timed on the Python path
(``TENSORSIGHT_CAPTURE=python``, what accelerators and modes tensor/md5 use) for reference.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import Harness, Result

# Shared by this process and the msprobe child (kept as source so both build the same models).
MODELS = r"""
import torch

def build(kind, quick):
    torch.manual_seed(0)
    if kind == "mlp":
        layers, width, batch = (10, 256, 32) if quick else (50, 1024, 64)
        mods = []
        for _ in range(layers):
            mods += [torch.nn.Linear(width, width), torch.nn.ReLU()]
        model = torch.nn.Sequential(*mods)
        x = torch.randn(batch, width)
    else:
        model = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
            torch.nn.Flatten(), torch.nn.Linear(16, 10),
        )
        x = torch.randn(8, 3, 32, 32)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        return loss

    return model, step
"""

MSPROBE_CHILD = r"""
import json, os, shutil, sys, tempfile, time, statistics
import torch
torch.set_num_threads(int(sys.argv[4]))
from msprobe.pytorch import PrecisionDebugger
ns = {}
exec(sys.argv[1], ns)
kind, steps, quick = sys.argv[2], int(sys.argv[3]), sys.argv[6] == "1"
model, step = ns["build"](kind, quick)
for _ in range(2):
    step()
plain = []
for _ in range(steps):
    t = time.perf_counter(); step(); plain.append(time.perf_counter() - t)
out = {"plain": plain}
for task, level in json.loads(sys.argv[5]):
    tmp = tempfile.mkdtemp(prefix="bench_msprobe_")
    cfg = {"task": task, "dump_path": os.path.join(tmp, "dump"), "rank": [], "step": [],
           "level": level, "enable_dataloader": False,
           task: {"scope": [], "list": [], "data_mode": ["all"]}}
    path = os.path.join(tmp, "config.json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    debugger = PrecisionDebugger(config_path=path)
    times = []
    for i in range(steps + 1):
        t = time.perf_counter()
        debugger.start(model)
        step()
        debugger.stop()
        debugger.step()
        if i:  # the first captured step builds hooks
            times.append(time.perf_counter() - t)
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(tmp) for f in fs)
    if task == "tensor":
        shutil.rmtree(tmp, ignore_errors=True)  # tensor L1 leaves gigabytes
    else:
        out.setdefault("keep", []).append(tmp)  # the parent deletes it when the run ends
    out[f"{task} {level}"] = times
    out[f"{task} {level} bytes"] = size
    PrecisionDebugger._instance = None
print("RESULT " + json.dumps(out))
"""


def _models() -> Any:
    ns: dict[str, Any] = {}
    exec(MODELS, ns)
    return ns["build"]


def _msprobe_env() -> dict[str, str]:
    """The child's environment: ``$MSPROBE_PYTHONPATH`` (a ``pip install --target``
    folder) put in front of its ``PYTHONPATH``."""
    env = dict(os.environ)
    extra = os.environ.get("MSPROBE_PYTHONPATH")
    if extra:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (extra, env.get("PYTHONPATH")) if p)
    return env


def _msprobe_python() -> str | None:
    env = os.environ.get("MSPROBE_PYTHON")
    if env:
        return env
    probe = subprocess.run(
        [sys.executable, "-c", "import msprobe"],
        capture_output=True,
        check=False,
        env=_msprobe_env(),
    )
    return sys.executable if probe.returncode == 0 else None


def _sync_tree(folder: str) -> None:
    """fdatasync every file under ``folder`` (what ``dd conv=fdatasync`` does for its file)."""
    for d, _, files in os.walk(folder):
        for name in files:
            fd = os.open(os.path.join(d, name), os.O_RDONLY)
            try:
                os.fdatasync(fd)
            finally:
                os.close(fd)


def _dd_speed(folder: str, mib: int, *, direct: bool = False) -> float:
    """Bytes per second of ``dd`` writing ``mib`` MiB with fdatasync (``direct``: in 4 MiB
    blocks with ``oflag=direct``, past the page cache)."""
    target = os.path.join(folder, "dd.bin")
    how = ["bs=4M", f"count={max(1, mib // 4)}", "oflag=direct"] if direct else [
        "bs=1M", f"count={mib}", "conv=fdatasync"
    ]  # fmt: skip
    mib = max(1, mib // 4) * 4 if direct else mib
    start = time.perf_counter()
    subprocess.run(
        ["dd", "if=/dev/zero", f"of={target}", *how],
        capture_output=True,
        check=True,
    )
    elapsed = time.perf_counter() - start
    os.unlink(target)
    return mib * (1 << 20) / elapsed


def _create_cost() -> float:
    """Microseconds to create a folder with one file in it, where the dumps go (tempdir).

    A dump makes one folder and one table file per step. On ext4 without a journal a file
    created soon after many deletions costs up to a millisecond instead of ~15 us; this
    line tells a reader whether the tiny-CNN figures were taken in that state. The probe's
    own files, like the statistics dumps, are deleted only when the run ends.
    """
    folder = tempfile.mkdtemp(prefix="bench_create_")
    _LEFTOVERS.append(folder)
    start = time.perf_counter()
    for i in range(_PROBE_FOLDERS):
        os.mkdir(os.path.join(folder, str(i)))
        os.close(os.open(os.path.join(folder, str(i), "f"), os.O_CREAT | os.O_WRONLY, 0o644))
    return (time.perf_counter() - start) / _PROBE_FOLDERS * 1e6


# Folders deleted only when the run ends (the small dumps and the probe's files): deleting
# them between rounds slowed the next rounds' file creation (see _create_cost).
_LEFTOVERS: list[str] = []
_PROBE_FOLDERS = 50


def _bytes_in(folder: str) -> int:
    return sum(
        os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(folder) for f in files
    )


def _tensorsight(
    h: Harness, label: str, step: Any, steps: int, *, sync: bool = False, **kwargs: Any
) -> Result:
    """Time ``steps`` captured steps; notes: bytes, drain (close) and total seconds.

    The first captured step (hooks, caches, writer thread) is not timed, nor are its bytes
    counted; ``sync`` also fdatasyncs the dump's files after close, inside ``total``.
    """
    import tensorsight

    capture = kwargs.pop("capture", "auto")
    folder = tempfile.mkdtemp(prefix="bench_dump_")
    before = os.environ.get("TENSORSIGHT_CAPTURE")
    os.environ["TENSORSIGHT_CAPTURE"] = capture
    try:
        d = tensorsight.dump(os.path.join(folder, "d"), **kwargs).start()
        if before is None:
            del os.environ["TENSORSIGHT_CAPTURE"]
        else:
            os.environ["TENSORSIGHT_CAPTURE"] = before
        step()  # warm: hooks, caches, writer thread
        d.step()
        result = h.results.setdefault(label, Result(label))
        for _ in range(steps):
            t = time.perf_counter()
            step()
            d.step()
            result.seconds.append(time.perf_counter() - t)
        t = time.perf_counter()
        d.close()
        drain = time.perf_counter() - t
        synced = 0.0
        if sync:
            t = time.perf_counter()
            _sync_tree(folder)
            synced = time.perf_counter() - t
        size = _bytes_in(folder)
        warm = _bytes_in(os.path.join(folder, "d", "rank0", "step0"))
        total = sum(result.seconds) + drain + synced
        manifest = json.loads(Path(folder, "d", "rank0", "manifest.json").read_text())
        result.notes.update(
            capture=str(manifest.get("extra", {}).get("capture", "")),
            bytes=str(size - warm),
            drain=f"{drain:.3f}",
            sync=f"{synced:.3f}",
            total=f"{total:.3f}",
        )
        return result
    finally:
        if sync:  # tensor mode: gigabytes, deleted now
            shutil.rmtree(folder, ignore_errors=True)
        else:
            _LEFTOVERS.append(folder)


def _plain(h: Harness, label: str, step: Any, steps: int) -> Result:
    for _ in range(2):
        step()
    result = h.results.setdefault(label, Result(label))
    for _ in range(steps):
        t = time.perf_counter()
        step()
        result.seconds.append(time.perf_counter() - t)
    return result


def _interleaved(
    h: Harness,
    kind: str,
    step: Any,
    rounds: int,
    per_round: int,
    modes: dict[str, dict[str, Any]],
) -> tuple[Result, list[Result]]:
    """Plain and captured steps in alternating rounds (each round: ``per_round`` plain
    steps, then ``per_round`` captured steps per mode in a new dump), so that a change in
    the machine's load hits all cases alike. Notes ``total_with_close``: captured seconds
    plus each dump's close."""
    plain = h.results.setdefault(f"{kind} plain step", Result(f"{kind} plain step"))
    results = [
        h.results.setdefault(f"{kind} tensorsight {m}", Result(f"{kind} tensorsight {m}"))
        for m in modes
    ]
    totals = [0.0] * len(modes)
    ratios: list[list[float]] = [[] for _ in modes]
    for _ in range(rounds):
        start = len(plain.seconds)
        _plain(h, plain.label, step, per_round)
        base = statistics.median(plain.seconds[start:])
        for i, kwargs in enumerate(modes.values()):
            before = len(results[i].seconds)
            r = _tensorsight(h, results[i].label, step, per_round, **kwargs)
            totals[i] += sum(r.seconds[before:]) + float(r.notes["drain"])
            ratios[i].append(statistics.median(r.seconds[before:]) / base)
    for r, total, rs in zip(results, totals, ratios, strict=True):
        r.notes["total_with_close"] = f"{total:.4f}"
        r.notes["round_ratios"] = " ".join(f"{x:.2f}" for x in rs)
    return plain, results


def _ratio_note(r: Result, plain: Result) -> str:
    capture = r.notes.get("capture")
    text = (
        f"{r.label}{f' ({capture} capture)' if capture else ''}: "
        f"x{r.median / plain.median:.2f} the plain step "
        f"(medians of {len(r.seconds)} and {len(plain.seconds)} steps; fastest runs: "
        f"x{min(r.seconds) / min(plain.seconds):.2f}"
    )
    if "round_ratios" in r.notes:
        rs = [float(x) for x in r.notes["round_ratios"].split()]
        per_step = float(r.notes["total_with_close"]) / len(r.seconds)
        text += (
            f"; median of the rounds' ratios: x{statistics.median(rs):.2f} "
            f"[{r.notes['round_ratios']}]; steps plus each dump's close, per step, over the "
            f"plain median: x{per_step / plain.median:.2f}"
        )
    return text + ")"


def _writer_only(h: Harness, total_mib: int) -> float:
    """Bytes per second of the dump writer alone: 4 MiB float32 tensors, queued then drained."""
    import torch

    import tensorsight

    folder = tempfile.mkdtemp(prefix="bench_writer_")
    tensors = [torch.randn(1 << 20) for _ in range(8)]
    try:
        start = time.perf_counter()
        with tensorsight.dump(os.path.join(folder, "d"), mode="tensor", level="api"):
            for i in range(total_mib // 4):
                torch.neg(tensors[i % len(tensors)])  # one op: input + output stored (8 MiB)
        elapsed = time.perf_counter() - start
        written = _bytes_in(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    h.results["writer only (tensor mode, 4 MiB tensors)"] = Result(
        "writer only (tensor mode, 4 MiB tensors)", [elapsed]
    )
    return written / elapsed


def _msprobe(h: Harness, python: str, kind: str, steps: int, tasks: list[list[str]]) -> None:
    threads = str(max(1, min(os.cpu_count() or 1, 4)))
    proc = subprocess.run(
        [
            python,
            "-c",
            MSPROBE_CHILD,
            MODELS,
            kind,
            str(steps),
            threads,
            json.dumps(tasks),
            "1" if h.quick else "0",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=3600,
        env=_msprobe_env(),
    )
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), None)
    if line is None:
        h.note(f"msprobe ({kind}) failed: {proc.stderr.strip()[-300:]}")
        return
    out = json.loads(line[len("RESULT ") :])
    _LEFTOVERS.extend(out.get("keep", []))
    plain = statistics.median(out["plain"])
    # one plain row per child (its ratios are against it): "mlp plain (msprobe child: tensor L1)"
    child = ", ".join(f"{task} {level}" for task, level in tasks)
    plain_label = f"{kind} plain (msprobe child: {child})"
    h.results[plain_label] = Result(plain_label, list(out["plain"]))
    for task, level in tasks:
        key = f"{task} {level}"
        label = f"{kind} msprobe {key}"
        h.results[label] = Result(label, list(out[key]))
        ratio = statistics.median(out[key]) / plain
        best = min(out[key]) / min(out["plain"])
        mb = out[f"{key} bytes"] / 1e6
        h.note(
            f"{label}: x{ratio:.2f} the plain step in its process (fastest runs: x{best:.2f}), "
            f"{mb:.1f} MB written"
        )


def run(h: Harness) -> None:
    try:
        _run(h)
    finally:
        for folder in _LEFTOVERS:
            shutil.rmtree(folder, ignore_errors=True)
        _LEFTOVERS.clear()


def _run(h: Harness) -> None:
    import torch

    torch.set_num_threads(max(1, min(os.cpu_count() or 1, 4)))
    build = _models()
    steps = 2 if h.quick else max(3, h.repeat)
    msprobe_python = _msprobe_python()

    # Statistics first, tensor mode (gigabytes written, then flushed by the kernel) last, so
    # that the disk's writeback does not run under the statistics measurements.
    # ---------------------------------------------------------------- statistics and md5
    create_before = _create_cost()
    _, mlp_step = build("mlp", h.quick)
    _, cnn_step = build("cnn", h.quick)
    rounds = max(1, h.repeat)
    per_round = 2 if h.quick else 3
    cnn_steps = per_round * 5
    plain, (stats, md5) = _interleaved(
        h,
        "mlp",
        mlp_step,
        rounds,
        per_round,
        {"statistics": {}, "md5": {"mode": "md5"}},
    )
    h.compare("mlp plain step")
    for r in (stats, md5):
        h.note(_ratio_note(r, plain))
    cnn_plain, (cnn_stats, cnn_python) = _interleaved(
        h,
        "cnn",
        cnn_step,
        rounds,
        cnn_steps,
        {"statistics": {}, "statistics, python path": {"capture": "python"}},
    )
    for r in (cnn_stats, cnn_python):
        h.note(_ratio_note(r, cnn_plain))
    h.note(
        f"creating a step folder and its table file: {create_before:.0f} us before the "
        f"statistics runs, {_create_cost():.0f} us after them (~15-30 us on a healthy "
        "disk; see benchmarks/README.md)"
    )
    if msprobe_python:
        _msprobe(h, msprobe_python, "cnn", cnn_steps, [["statistics", "L1"]])
        _msprobe(h, msprobe_python, "mlp", steps, [["statistics", "L1"], ["statistics", "mix"]])
    else:
        h.note("msprobe not found: set MSPROBE_PYTHON to an interpreter with mindstudio-probe")

    # ---------------------------------------------------------------- tensor mode
    tensor = _tensorsight(h, "mlp tensorsight tensor", mlp_step, steps, mode="tensor", sync=True)
    h.note(_ratio_note(tensor, plain))
    written = int(tensor.notes["bytes"])
    total = float(tensor.notes["total"])
    extra = max(total - steps * plain.median, 1e-9)
    folder = tempfile.mkdtemp(prefix="bench_dd_")
    try:
        dd = _dd_speed(folder, 64 if h.quick else 1024)
        dd_same = _dd_speed(folder, max(64, min(written >> 20, 16 << 10)))
        dd_direct = _dd_speed(folder, max(64, min(written >> 20, 16 << 10)), direct=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    rate = written / extra
    h.note(
        f"tensor mode: {written / 1e6:.0f} MB in {total:.2f} s incl. drain "
        f"({tensor.notes['drain']} s) and fdatasync ({tensor.notes['sync']} s); "
        f"{rate / 1e6:.0f} MB/s over the plain steps' time"
    )
    h.note(
        f"  = {rate / dd_same:.0%} of dd writing the same {written >> 20} MiB "
        f"({dd_same / 1e6:.0f} MB/s; goal >= 70%); {rate / dd:.0%} of dd writing 1 GiB "
        f"({dd / 1e6:.0f} MB/s, mostly page cache)"
    )
    # the dump sends large tensors past the page cache (direct I/O): dd doing the same is
    # the stricter yardstick for the disk's speed, so it is reported too
    best = max(dd_same, dd_direct)
    h.note(
        f"  = {rate / dd_direct:.0%} of dd oflag=direct writing the same bytes "
        f"({dd_direct / 1e6:.0f} MB/s); against the faster dd: {rate / best:.0%}"
    )
    wrate = _writer_only(h, 256 if h.quick else 2048)
    h.note(f"writer alone: {wrate / 1e6:.0f} MB/s = {wrate / dd:.0%} of dd's 1 GiB speed")
    if msprobe_python:
        _msprobe(h, msprobe_python, "mlp", steps, [["tensor", "L1"]])
