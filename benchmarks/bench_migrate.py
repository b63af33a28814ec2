"""Migration throughput on a generated corpus of CUDA training code.

Anchor: a plain ``libcst.parse_module(code).code`` round trip over the same files, in one
process (the least any LibCST codemod must do). Cases: ``tensorsight.migrate`` in one
worker (lines/s per core) and in one worker per CPU (parallel across files). Goal: at
least 5,000 lines/s per core. Every generated file contains CUDA code, so every file is
parsed and rewritten (files without CUDA text are skipped unparsed in real projects, which
makes real projects faster than this corpus).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from benchmarks.harness import Harness

MODEL = '''\
class Block{i}(nn.Module):
    """Residual block number {i}."""

    def __init__(self, dim: int = 64) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, dim * 4)
        self.fc2 = nn.Linear(dim * 4, dim)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        h = self.norm(x)
        h = self.fc2(self.drop(torch.nn.functional.gelu(self.fc1(h))))
        return x + h


def helper_{i}(values, scale=1.0):
    total = 0.0
    for v in values:
        if v > 0:
            total += v * scale
        else:
            total -= v / (scale + 1e-6)
    return {{"total": total, "count": len(values), "mean": total / max(len(values), 1)}}

'''

TRAIN = """\
def train_{i}(model, loader, steps, local_rank):
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = model.cuda()
    scaler = GradScaler()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step, (x, y) in enumerate(loader):
        x, y = x.cuda(non_blocking=True), y.to(device)
        with autocast(dtype=torch.bfloat16):
            loss = torch.nn.functional.mse_loss(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        if step % 10 == 0:
            torch.cuda.synchronize()
            print(step, loss.item(), torch.cuda.memory_allocated() / 2**20)
        if step >= steps:
            break
    torch.save(model.state_dict(), f"ckpt_{i}.pt")
    return torch.load(f"ckpt_{i}.pt", map_location="cuda:0")

"""

HEADER = '''\
"""Generated training module {n}."""

import os

import torch
from torch import nn
from torch.cuda.amp import GradScaler, autocast

'''


def make_corpus(root: Path, files: int, blocks: int) -> int:
    """Write ``files`` modules; returns the total line count."""
    lines = 0
    for n in range(files):
        parts = [HEADER.format(n=n)]
        for i in range(blocks):
            parts.append(MODEL.format(i=i))
        parts.append(TRAIN.format(i=n))
        text = "".join(parts)
        (root / f"mod_{n:04}.py").write_text(text)
        lines += text.count("\n")
    return lines


def run(h: Harness) -> None:
    import libcst

    from tensorsight.migrate import migrate

    files, blocks = (16, 4) if h.quick else (120, 8)
    root = Path(tempfile.mkdtemp(prefix="bench-migrate-"))
    try:
        lines = make_corpus(root, files, blocks)
        texts = [p.read_text() for p in sorted(root.glob("*.py"))]
        cpus = os.cpu_count() or 1

        def anchor() -> None:
            for text in texts:
                assert libcst.parse_module(text).code == text

        h.measure("libcst parse+codegen (1 core)", anchor)
        h.measure("tensorsight migrate (1 worker)", lambda: migrate(root, workers=1))
        h.measure(f"tensorsight migrate ({cpus} workers)", lambda: migrate(root, workers=cpus))
        h.compare("libcst parse+codegen (1 core)")
        start = time.process_time()
        anchor()
        anchor_cpu = time.process_time() - start
        start = time.process_time()
        report = migrate(root, workers=1)
        migrate_cpu = time.process_time() - start
        serial = h.results["tensorsight migrate (1 worker)"].median
        parallel = h.results[f"tensorsight migrate ({cpus} workers)"].median
        base = h.results["libcst parse+codegen (1 core)"].median
        h.note(f"corpus: {files} files, {lines} lines, {len(report.sites)} sites")
        h.note(f"anchor libcst parse+codegen: {lines / base:,.0f} lines/s on 1 core")
        h.note(f"tensorsight migrate: {lines / serial:,.0f} lines/s per core (goal >= 5,000)")
        h.note(f"tensorsight migrate, {cpus} workers: {lines / parallel:,.0f} lines/s in total")
        h.note(
            f"CPU time (immune to other load on the machine): anchor {lines / anchor_cpu:,.0f}, "
            f"tensorsight migrate {lines / migrate_cpu:,.0f} lines per CPU-second"
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
