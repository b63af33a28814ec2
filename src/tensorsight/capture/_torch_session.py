"""Torch-side construction of a dump session (imported only once torch is needed)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch
from torch.utils._python_dispatch import _disable_current_modes

from tensorsight.capture import _torch_stats as ts
from tensorsight.capture._arena import CopyArena
from tensorsight.capture._modules import ModuleTracker
from tensorsight.capture._recorder import Recorder
from tensorsight.capture.backends import candidates, select
from tensorsight.dumpformat.writer import (
    DEFAULT_MAX_QUEUE_BYTES,
    DumpWriter,
    base_manifest,
)

__all__ = ["build", "rank_and_world"]


def rank_and_world() -> tuple[int, int]:
    """This process's rank and the world size (torch.distributed, else RANK/WORLD_SIZE)."""
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))


def _device() -> str:
    if torch.cuda.is_available() and torch.cuda.is_initialized():  # type: ignore[no-untyped-call]
        return f"cuda:{torch.cuda.current_device()}"
    return "cpu"


def _queue_bytes(options: dict[str, Any]) -> int:
    return int(options["max_queue_bytes"] or DEFAULT_MAX_QUEUE_BYTES)


def _numerics() -> dict[str, Any]:
    """Settings that change results bit for bit on the same build (``manifest.extra``)."""
    facts: dict[str, Any] = {
        "num_threads": torch.get_num_threads(),
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
    }
    cudnn = torch.backends.cudnn
    if cudnn.is_available():  # type: ignore[no-untyped-call]
        facts["cudnn_version"] = cudnn.version()  # type: ignore[no-untyped-call]
        facts["cudnn_deterministic"] = bool(cudnn.deterministic)
        facts["cudnn_benchmark"] = bool(cudnn.benchmark)
    return facts


def build(rank_dir: Path, rank: int, world_size: int, options: dict[str, Any]) -> tuple[Any, ...]:
    """Writer, recorder, module tracker and backend for one rank."""
    backend_cls: Any = select(options)  # the level's first candidate that can record it
    extra = _numerics()
    if len(candidates(options["level"])) > 1:
        # which one recorded the ops: level op's two differ in a few ops (docs/formats/dump.md)
        extra["capture"] = backend_cls.implementation
    manifest = base_manifest(
        mode=options["mode"],
        level=options["level"],
        framework="torch",
        framework_version=torch.__version__,
        device=_device(),
        rank=rank,
        world_size=world_size,
        extra=extra,
    )
    arena_box: list[CopyArena] = []
    writer = DumpWriter(
        rank_dir,
        manifest,
        to_bytes=ts.tensor_bytes,
        measure=ts.stats_tensor,
        fingerprint=ts.fingerprint,
        release=lambda copy: arena_box[0].release(copy) if arena_box else None,
        max_queue_bytes=options["max_queue_bytes"],
        shard_bytes=options["shard_bytes"],
    )
    arena = None
    if options["mode"] != "statistics":
        arena = CopyArena(_queue_bytes(options))
        arena_box.append(arena)
    recorder = Recorder(
        writer,
        mode=options["mode"],
        include=options["include"],
        exclude=options["exclude"],
        stack=options["stack"],
        arena=arena,
    )

    def on_param_grad(path: str, name: str, param: torch.nn.Parameter) -> None:
        backend = holder[0]
        if not backend.is_active or param.grad is None:
            return
        op = "tensorsight.param_grad"
        if not recorder.wants(op, path):
            return
        paused = getattr(backend, "paused", None)
        if paused is not None:  # level op: its mode lets this thread's own torch calls through
            paused.on = True
            try:
                snaps = recorder.snapshot([(f"param.{name}", param), (f"grad.{name}", param.grad)])
            finally:
                paused.on = False
        else:
            with _disable_current_modes():
                snaps = recorder.snapshot([(f"param.{name}", param), (f"grad.{name}", param.grad)])
        recorder.commit(op, "backward", path, snaps)

    tracker = ModuleTracker(on_param_grad if backend_cls.param_grads else None)
    backend = backend_cls(recorder, tracker)
    holder = [backend]
    return writer, recorder, tracker, backend
