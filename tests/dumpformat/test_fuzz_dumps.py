"""Seeded mutation tests of every dump reader: each damaged file reads or gives DumpFormatError.

Seeds are real files: the msprobe dumps in ``tests/dumpformat/data/msprobe`` (``dump.json``
and its ``.pt`` tensors; ``.npy`` copies of them, as msprobe writes for numpy arrays), the
MindSpore Dump in ``tests/dumpformat/data/mindspore/fp32`` (execution order, metadata,
``.npy`` tensors, their headers mutated as literals) and a tensorsight dump written here
(``manifest.json``, ``ops.parquet`` from tensorsight's own encoder and from pyarrow with
zstd, ``ops.jsonl``, a safetensors shard). Each mutation
(bit flips, truncations, overwritten or repeated runs of bytes; for JSON, one value swapped
for a value of another type, a deleted key, a huge or deeply nested value; for a
safetensors header the same, re-encoded with a valid length) is read completely: layout,
manifests, every row, every stored tensor. The outcome must be a full read or one of the
documented errors (:class:`DumpFormatError`, :class:`SchemaVersionError`); any other
exception is a crash. A watchdog ends the process if one read hangs (a liveness bound,
not a timing assertion). The seeds and counts are fixed, so a failure reproduces.
"""

from __future__ import annotations

import ast
import faulthandler
import json
import os
import random
import shutil
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tensorsight
from tensorsight.capture import DumpManifest, read_dump
from tensorsight.dumpformat import _table
from tensorsight.errors import DumpFormatError, SchemaVersionError

torch = pytest.importorskip("torch")

DATA = Path(__file__).parent / "data" / "msprobe"
MINDSPORE = Path(__file__).parent / "data" / "mindspore" / "fp32"
SEED = 20  # issue 20
DOCUMENTED = (DumpFormatError, SchemaVersionError)
HANG_S = 300  # each test's watchdog: a hung read ends the run with its traceback


def exercise(path: Path) -> int:
    """Read everything a comparison would: manifests, rows, ops and every stored tensor."""
    dump = read_dump(path)
    n = 0
    for r in dump.ranks:
        dump.manifest(r)
    _ = dump.complete
    for step in dump.iter_steps():
        try:
            for row in step.rows:
                _ = row.name, row.numel
                if step.has_data(row):
                    step.load(row)
                n += 1
            _ = step.ops
        finally:
            step.close()
    return n


# ---------------------------------------------------------------- mutators

_HOSTILE: list[Any] = [
    None,
    True,
    0,
    -1,
    3,
    2**63,
    10**400,
    1.5,
    float("nan"),
    "",
    "3,4",
    "x" * 300,
    [],
    [None],
    [2**40, 2**40],
    {},
    {"dtype": "torch.float32", "shape": 3},
]


def _deep(n: int) -> Any:
    v: Any = []
    for _ in range(n):
        v = [v]
    return v


def byte_mutations(data: bytes, rng: random.Random, n: int) -> Iterator[bytes]:
    """``n`` damaged copies of ``data``: bit flips, truncations, overwritten/repeated runs."""
    for _ in range(n):
        buf = bytearray(data)
        kind = rng.random()
        if kind < 0.45:  # one to four flipped bits
            for _ in range(rng.randint(1, 4)):
                i = rng.randrange(len(buf))
                buf[i] ^= 1 << rng.randrange(8)
        elif kind < 0.6:
            del buf[rng.randrange(len(buf)) :]
        elif kind < 0.8:  # a run overwritten with random bytes, zeros or 0xFF
            i = rng.randrange(len(buf))
            k = rng.randint(1, 16)
            fill = rng.choice([None, 0, 0xFF])
            for j in range(i, min(len(buf), i + k)):
                buf[j] = rng.randrange(256) if fill is None else fill
        elif kind < 0.9:  # a run repeated (lengths and offsets then point elsewhere)
            i = rng.randrange(len(buf))
            buf[i:i] = buf[i : i + rng.randint(1, 64)]
        else:  # a run removed
            i = rng.randrange(len(buf))
            del buf[i : i + rng.randint(1, 64)]
        yield bytes(buf)


def _nodes(obj: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _nodes(v, (*path, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _nodes(v, (*path, i))


def json_mutation(obj: Any, rng: random.Random) -> Any:
    """A copy of ``obj`` with one node replaced by a value of another type, or deleted."""
    obj = json.loads(json.dumps(obj))
    paths = [p for p in _nodes(obj) if p]
    path = rng.choice(paths)
    parent = obj
    for k in path[:-1]:
        parent = parent[k]
    kind = rng.random()
    if kind < 0.15 and isinstance(parent, dict):
        del parent[path[-1]]
    elif kind < 0.2:
        parent[path[-1]] = _deep(rng.choice([40, 2000, 100_000]))
    else:
        parent[path[-1]] = rng.choice(_HOSTILE)
    return obj


def json_mutations(data: bytes, rng: random.Random, n: int) -> Iterator[bytes]:
    obj = json.loads(data)
    for _ in range(n):
        try:
            yield json.dumps(json_mutation(obj, rng)).encode()
        except RecursionError:  # json.dumps itself cannot write that deep: swap it
            yield b"[" * 100_000 + b"]" * 100_000


def header_mutations(data: bytes, rng: random.Random, n: int) -> Iterator[bytes]:
    """Safetensors files whose JSON header is mutated and re-encoded with a valid length."""
    (size,) = struct.unpack("<Q", data[:8])
    header, body = json.loads(data[8 : 8 + size]), data[8 + size :]
    for blob in json_mutations(json.dumps(header).encode(), rng, n):
        blob += b" " * (-len(blob) % 8)
        yield struct.pack("<Q", len(blob)) + blob + body


_HOSTILE_LITERALS: list[Any] = [
    None, True, 0, -1, 2**63, 10**400, 1.5, "", "x" * 300, "<U4", "|O", "V8", ">f8", "<c8",
    (), (-1,), (2**40, 2**40), (2**62, 4), (1.5,), (True,), ("2",), [2, 4], {"x": 1},
]  # fmt: skip


def npy_header_mutations(data: bytes, rng: random.Random, n: int) -> Iterator[bytes]:
    """``.npy`` files whose header dict has one value swapped or a key deleted, re-encoded."""
    (length,) = struct.unpack("<H", data[8:10])
    header, body = ast.literal_eval(data[10 : 10 + length].decode("latin1")), data[10 + length :]
    for _ in range(n):
        h = dict(header)
        k = rng.choice(sorted(h))
        kind = rng.random()
        if kind < 0.15:
            del h[k]
        elif kind < 0.2:
            h[k] = "(" * rng.choice([40, 2000]) + ")" * 3  # unbalanced: not a literal
        else:
            h[k] = rng.choice(_HOSTILE_LITERALS)
        raw = repr(h).encode("latin1") + b"\n"
        yield data[:8] + struct.pack("<H", len(raw)) + raw + body


# ---------------------------------------------------------------- the harness


@dataclass
class Tally:
    mutations: int = 0
    read: int = 0
    refused: int = 0
    crashes: list[str] = field(default_factory=list)


TALLIES: dict[str, Tally] = {}


def fuzz(name: str, folder: Path, file: Path, mutations: Iterator[bytes]) -> Tally:
    original = file.read_bytes()
    tally = TALLIES[name] = Tally()
    try:
        for i, blob in enumerate(mutations):
            file.write_bytes(blob)
            tally.mutations += 1
            try:
                exercise(folder)
                tally.read += 1
            except DOCUMENTED as exc:
                if "\n" in str(exc):  # a user error is one line
                    tally.crashes.append(f"#{i}: a message of several lines: {str(exc)[:200]}")
                tally.refused += 1
            except Exception as exc:
                tally.crashes.append(f"#{i}: {type(exc).__name__}: {str(exc)[:200]}")
    finally:
        file.write_bytes(original)
    return tally


@pytest.fixture(autouse=True)
def watchdog():
    # per test, not per module: under a loaded machine the module as a whole outran one
    # bound and the process was ended with no failure reported
    faulthandler.dump_traceback_later(HANG_S, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


@pytest.fixture(scope="module")
def msprobe_tensor(tmp_path_factory) -> Path:
    dst = tmp_path_factory.mktemp("fz") / "ms"
    shutil.copytree(DATA / "tensor_L1", dst)
    return dst


@pytest.fixture(scope="module")
def msprobe_npy(msprobe_tensor, tmp_path_factory) -> Path:
    """tensor_L1 with every tensor as a .npy file (the .pt files read with torch)."""
    dst = tmp_path_factory.mktemp("fz") / "npy"
    shutil.copytree(msprobe_tensor, dst)
    (folder,) = (dst / "step0").iterdir()
    for pt in (folder / "dump_tensor_data").glob("*.pt"):
        np.save(pt.with_suffix(".npy"), torch.load(pt, weights_only=True).numpy())
        pt.unlink()
    text = (folder / "dump.json").read_text().replace('.pt"', '.npy"')
    (folder / "dump.json").write_text(text)
    return dst


@pytest.fixture(scope="module")
def own_dump(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("fz") / "own"
    with tensorsight.dump(path, mode="tensor") as d:
        x = torch.arange(-3.0, 3.0)
        torch.relu(x) * 2
        (x.to(torch.bfloat16) + 1).sum()
        d.step()
    # the same bytes on every run (the wall time and argv vary), so the mutations repeat
    file = path / "rank0" / "manifest.json"
    manifest = DumpManifest.from_json(file.read_text())
    fixed = replace(
        manifest, created=0.0, command_line=("fuzz",), python_version="3",
        framework_version="2", tensorsight_version="0",
    )  # fmt: skip
    file.write_text(fixed.to_json())
    return path


def _one(folder: Path, pattern: str) -> Path:
    (file,) = sorted(folder.rglob(pattern))[:1]
    return file


def _healthy(folder: Path) -> int:
    n = exercise(folder)
    assert n > 0
    return n


def _check(t: Tally, n: int) -> None:
    assert t.mutations == n
    assert t.crashes == [], "\n".join(t.crashes[:10])
    assert t.refused > 0  # the damage is seen, not read as something else silently


N_BYTES = 120
N_JSON = 120


@pytest.mark.parametrize("seed_dir", ["tensor_L1", "statistics_mix", "md5_L0"])
def test_fuzz_msprobe_dump_json(tmp_path, seed_dir):
    folder = tmp_path / seed_dir
    shutil.copytree(DATA / seed_dir, folder)
    _healthy(folder)
    file = _one(folder, "dump.json")
    rng = random.Random(f"{SEED}-{seed_dir}")
    _check(fuzz(f"msprobe dump.json bytes ({seed_dir})", folder, file,
                byte_mutations(file.read_bytes(), rng, N_BYTES)), N_BYTES)  # fmt: skip
    _check(fuzz(f"msprobe dump.json types ({seed_dir})", folder, file,
                json_mutations(file.read_bytes(), rng, N_JSON)), N_JSON)  # fmt: skip
    assert exercise(folder) == _healthy(DATA / seed_dir)  # restored, reads as before


def test_fuzz_msprobe_tensor_files(msprobe_tensor, msprobe_npy):
    rng = random.Random(f"{SEED}-tensors")
    for name, folder, pattern in (("pt", msprobe_tensor, "*.pt"), ("npy", msprobe_npy, "*.npy")):
        _healthy(folder)
        files = sorted(folder.rglob(pattern))
        for file in (files[0], files[-1]):
            t = fuzz(f"msprobe .{name} ({file.name})", folder, file,
                     byte_mutations(file.read_bytes(), rng, N_BYTES // 2))  # fmt: skip
            _check(t, N_BYTES // 2)


def test_fuzz_own_manifest(own_dump):
    n = _healthy(own_dump)
    file = own_dump / "rank0" / "manifest.json"
    rng = random.Random(f"{SEED}-manifest")
    _check(fuzz("manifest.json bytes", own_dump, file,
                byte_mutations(file.read_bytes(), rng, N_BYTES)), N_BYTES)  # fmt: skip
    _check(fuzz("manifest.json types", own_dump, file,
                json_mutations(file.read_bytes(), rng, N_JSON)), N_JSON)  # fmt: skip
    assert exercise(own_dump) == n


def _pyarrow_table(step_dir: Path) -> bytes:
    """The same op table written by pyarrow, zstd-compressed with dictionaries."""
    from tensorsight.dumpformat.schema import COLUMNS

    rows = [tuple(r.get(c) for c in COLUMNS) for r in _table.read_rows(step_dir)]
    return bytes(_table._pyarrow_parquet(list(zip(*rows, strict=True)), big=True))


def test_fuzz_own_op_table(own_dump):
    n = _healthy(own_dump)
    step_dir = own_dump / "rank0" / "step0"
    file = step_dir / _table.PARQUET_NAME
    rng = random.Random(f"{SEED}-parquet")
    ours = file.read_bytes()
    _check(fuzz("ops.parquet (own encoder)", own_dump, file,
                byte_mutations(ours, rng, N_BYTES)), N_BYTES)  # fmt: skip
    big = _pyarrow_table(step_dir)
    file.write_bytes(big)
    try:
        assert exercise(own_dump) == n
        _check(fuzz("ops.parquet (pyarrow, zstd)", own_dump, file,
                    byte_mutations(big, rng, N_BYTES)), N_BYTES)  # fmt: skip
    finally:
        file.write_bytes(ours)
    # the log a run that stopped mid-step leaves, read when there is no Parquet file
    log = step_dir / _table.LOG_NAME
    from tensorsight.dumpformat.schema import COLUMNS

    lines = [
        _table.encode_line(tuple(r.get(c) for c in COLUMNS)) for r in _table.read_rows(step_dir)
    ]
    log.write_text("".join(lines))
    file.rename(file.with_suffix(".bak"))
    try:
        assert exercise(own_dump) == n
        _check(fuzz("ops.jsonl", own_dump, log, byte_mutations(log.read_bytes(), rng, N_BYTES)),
               N_BYTES)  # fmt: skip
    finally:
        log.unlink()
        file.with_suffix(".bak").rename(file)
    assert exercise(own_dump) == n


def test_fuzz_own_shard(own_dump):
    n = _healthy(own_dump)
    file = _one(own_dump, "*.safetensors")
    rng = random.Random(f"{SEED}-safetensors")
    _check(fuzz("safetensors bytes", own_dump, file,
                byte_mutations(file.read_bytes(), rng, N_BYTES)), N_BYTES)  # fmt: skip
    _check(fuzz("safetensors header types", own_dump, file,
                header_mutations(file.read_bytes(), rng, N_JSON)), N_JSON)  # fmt: skip
    assert exercise(own_dump) == n


@pytest.fixture(scope="module")
def mindspore_dump(tmp_path_factory) -> Path:
    dst = tmp_path_factory.mktemp("fz") / "msdump"
    shutil.copytree(MINDSPORE, dst)
    return dst


def test_fuzz_mindspore_dump(mindspore_dump):
    n = _healthy(mindspore_dump)
    rank = mindspore_dump / "rank_0"
    rng = random.Random(f"{SEED}-mindspore")
    order = rank / "execution_order" / "ms_execution_order_graph_0.csv"
    _check(fuzz("MindSpore execution order", mindspore_dump, order,
                byte_mutations(order.read_bytes(), rng, N_BYTES)), N_BYTES)  # fmt: skip
    meta = rank / ".dump_metadata" / "config.json"
    _check(fuzz("MindSpore config.json types", mindspore_dump, meta,
                json_mutations(meta.read_bytes(), rng, N_JSON // 2)), N_JSON // 2)  # fmt: skip
    tensors = sorted((rank / "MLP" / "0" / "0").glob("*.npy"))
    layer_norm = next(f for f in tensors if f.name.startswith("LayerNorm."))
    half = N_BYTES // 2
    for file in (tensors[0], layer_norm):
        data = file.read_bytes()
        _check(fuzz(f"MindSpore .npy ({file.name[:40]})", mindspore_dump, file,
                    byte_mutations(data, rng, half)), half)  # fmt: skip
        _check(fuzz(f"MindSpore .npy header ({file.name[:40]})", mindspore_dump, file,
                    npy_header_mutations(data, rng, half)), half)  # fmt: skip
    assert exercise(mindspore_dump) == n


def test_zz_fuzz_counts(capsys):
    """The tallies of the tests above; ``TENSORSIGHT_FUZZ_REPORT=1`` prints them."""
    total = sum(t.mutations for t in TALLIES.values())
    if os.environ.get("TENSORSIGHT_FUZZ_REPORT"):
        with capsys.disabled():
            for name, t in TALLIES.items():
                print(f"\n  {name}: {t.mutations} mutations, {t.read} read, "
                      f"{t.refused} refused, {len(t.crashes)} crashes", end="")  # fmt: skip
            print(f"\n  total: {total} mutations, 0 hangs (watchdog {HANG_S} s)")
    assert all(not t.crashes for t in TALLIES.values())
