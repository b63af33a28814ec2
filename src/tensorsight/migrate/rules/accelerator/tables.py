"""Data only: what each accelerator rule maps, from the CUDA API to the device-neutral one.

Every key is a fully qualified name after alias resolution. Rules read these tables;
changing a mapping needs no code.
"""

from __future__ import annotations

from tensorsight.migrate.model import Status
from tensorsight.migrate.rules._base import CallRename

AVAILABILITY: dict[str, CallRename] = {
    "torch.cuda.is_available": CallRename("accelerator.is_available"),
    "torch.cuda.device_count": CallRename("accelerator.device_count"),
    "torch.cuda.is_initialized": CallRename(
        "accelerator.is_available",
        note="Drift: is_initialized() said whether CUDA had been initialized yet (False "
        "before the first CUDA call); is_available() says whether an accelerator exists.",
    ),
}

CURRENT_DEVICE: dict[str, CallRename] = {
    "torch.cuda.current_device": CallRename("accelerator.current_device_index", "guarded", "0"),
    "torch.cuda.set_device": CallRename("accelerator.set_device_index", "guarded"),
    "torch.cuda.device": CallRename("device", "module"),
}

SYNCHRONIZE: dict[str, CallRename] = {
    "torch.cuda.synchronize": CallRename("synchronize", "module"),
    "torch.cuda.current_stream": CallRename("current_stream", "module"),
    "torch.cuda.default_stream": CallRename(
        "current_stream",
        "module",
        note="Drift: inside a `with stream(s):` block this is `s`, not the default stream; "
        "work queued on it no longer synchronizes with the default stream.",
    ),
    "torch.cuda.stream": CallRename("stream", "module"),
    "torch.cuda.Stream": CallRename("Stream", "ctor"),
    "torch.cuda.Event": CallRename(
        "Event",
        "ctor",
        note="Drift: on the CPU an Event records no time: `elapsed_time` raises there, so "
        "timing code needs an accelerator.",
    ),
}

MEMORY: dict[str, CallRename] = {
    f"torch.cuda.{name}": CallRename(f"accelerator.{name}", "guarded", default)
    for name, default in (
        ("memory_allocated", "0"),
        ("max_memory_allocated", "0"),
        ("memory_reserved", "0"),
        ("max_memory_reserved", "0"),
        ("memory_stats", "{}"),
        ("empty_cache", "None"),
        ("reset_peak_memory_stats", "None"),
        ("reset_accumulated_memory_stats", "None"),
    )
} | {
    "torch.cuda.memory_cached": CallRename("accelerator.memory_reserved", "guarded", "0"),
    "torch.cuda.max_memory_cached": CallRename("accelerator.max_memory_reserved", "guarded", "0"),
    "torch.cuda.mem_get_info": CallRename("accelerator.get_memory_info", "guarded", "(0, 0)"),
}

_SEED_DRIFT = (
    "Drift: this also seeds the CPU generator{every}, so CPU random numbers drawn afterwards "
    "(weight init, shuffling, CPU dropout) change too (broader seeding); and each device type "
    "has its own random stream, so another device never reproduces CUDA's random numbers."
)

SEEDING: dict[str, CallRename] = {
    "torch.cuda.manual_seed": CallRename(
        "manual_seed", note=_SEED_DRIFT.format(every=" and every device, not only the current one")
    ),
    "torch.cuda.manual_seed_all": CallRename("manual_seed", note=_SEED_DRIFT.format(every="")),
    "torch.cuda.seed": CallRename(
        "seed", note=_SEED_DRIFT.format(every="").replace("seeds", "reseeds", 1)
    ),
    "torch.cuda.seed_all": CallRename(
        "seed", note=_SEED_DRIFT.format(every="").replace("seeds", "reseeds", 1)
    ),
}

#: Legacy typed tensors -> dtype.
TYPED_TENSORS: dict[str, str] = {
    "FloatTensor": "float32",
    "DoubleTensor": "float64",
    "HalfTensor": "float16",
    "BFloat16Tensor": "bfloat16",
    "LongTensor": "int64",
    "IntTensor": "int32",
    "ShortTensor": "int16",
    "CharTensor": "int8",
    "ByteTensor": "uint8",
    "BoolTensor": "bool",
}

#: AMP: old -> (new name under torch, how the device type is passed).
AMP: dict[str, tuple[str, str]] = {
    "torch.cuda.amp.autocast": ("autocast", "positional"),
    "torch.autocast": ("autocast", "existing"),
    "torch.amp.autocast": ("autocast", "existing"),
    "torch.cuda.amp.GradScaler": ("amp.GradScaler", "positional"),
    "torch.amp.GradScaler": ("amp.GradScaler", "existing"),
    "torch.cuda.amp.custom_fwd": ("amp.custom_fwd", "keyword"),
    "torch.cuda.amp.custom_bwd": ("amp.custom_bwd", "keyword"),
    "torch.amp.custom_fwd": ("amp.custom_fwd", "existing"),
    "torch.amp.custom_bwd": ("amp.custom_bwd", "existing"),
}

#: Backend knobs (assignment targets) -> (status, message).
KNOBS: dict[str, tuple[str, str]] = {
    "torch.backends.cudnn.benchmark": (
        "kept",
        "cuDNN autotuning; harmless and without effect on other devices.",
    ),
    "torch.backends.cudnn.enabled": ("kept", "Only affects cuDNN; no effect on other devices."),
    "torch.backends.cudnn.allow_tf32": (
        "kept",
        "Only affects cuDNN convolutions; other devices choose their own convolution precision.",
    ),
    "torch.backends.cudnn.deterministic": (
        "kept",
        "Only affects cuDNN; for every device also call "
        "`torch.use_deterministic_algorithms(True)`.",
    ),
}

#: Calls with no device-neutral equivalent -> (status, concrete advice).
UNSUPPORTED: dict[str, tuple[Status, str]] = {
    "torch.cuda.CUDAGraph": (
        "unsupported",
        'CUDA graphs exist only on CUDA: guard the capture with `if _device.type == "cuda":` '
        'or use `torch.compile(mode="reduce-overhead")`, which picks graphs where supported.',
    ),
    "torch.cuda.graph": (
        "unsupported",
        'CUDA graphs exist only on CUDA: guard with `if _device.type == "cuda":` or use '
        '`torch.compile(mode="reduce-overhead")`.',
    ),
    "torch.cuda.make_graphed_callables": (
        "unsupported",
        "CUDA graphs exist only on CUDA: call the plain callables elsewhere, or use "
        '`torch.compile(mode="reduce-overhead")`.',
    ),
    "torch.cuda.get_device_name": (
        "manual",
        "Use `str(_device)` for logging, or `torch.get_device_module(_device).get_device_name()` "
        "where the backend has it.",
    ),
    "torch.cuda.get_device_properties": (
        "manual",
        'Device properties are backend-specific: guard with `if _device.type == "cuda":`.',
    ),
    "torch.cuda.get_device_capability": (
        "manual",
        "Use `torch.accelerator.get_device_capability()` (a dict of supported dtypes), not an "
        "SM version, to choose features.",
    ),
    "torch.cuda.is_bf16_supported": (
        "manual",
        'Check `torch.bfloat16 in torch.accelerator.get_device_capability()["supported_dtypes"]`'
        " when an accelerator is present.",
    ),
    "torch.cuda.get_rng_state": (
        "manual",
        "Use `torch.get_device_module(_device).get_rng_state()` when an accelerator is present, "
        "`torch.get_rng_state()` on the CPU.",
    ),
    "torch.cuda.set_rng_state": (
        "manual",
        "Use `torch.get_device_module(_device).set_rng_state(...)` when an accelerator is "
        "present, `torch.set_rng_state(...)` on the CPU.",
    ),
}

NVTX: dict[str, str] = {
    "torch.cuda.nvtx.range": "profiler.record_function",
}
NVTX_MANUAL: dict[str, str] = {
    "torch.cuda.nvtx.range_push": "Wrap the region in `with torch.profiler.record_function(name):`"
    " instead of range_push/range_pop (it works on every device).",
    "torch.cuda.nvtx.range_pop": "Remove with its range_push; see the record_function advice.",
    "torch.cuda.nvtx.mark": "Use `torch.profiler.record_function(name)` around the event.",
}

#: Names of variables whose integer value is a device index (``.to(local_rank)``).
INDEX_NAME_HINTS: tuple[str, ...] = ("rank", "gpu", "device_id", "device_idx", "dev_id")
