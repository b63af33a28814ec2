"""A new data kind is one kind file plus one registry line (CONTRIBUTING.md, "Adding a data
kind"): written with its ``encode()``, it comes back through ``Logdir.tags``,
``Logdir.records`` and ``DataProvider.read_records`` as its own record type.

The kind file lives in a tmp folder; the registry line runs, in a fresh interpreter, right
after ``summary/kinds/__init__.py`` (an import hook appends it to that module), which is what
adding the line there does: the reader, ``summary.records.KINDS`` and ``data.KINDS`` read the
registry when they are imported.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

KIND_FILE = textwrap.dedent(
    '''
    from dataclasses import dataclass

    from tensorsight.summary.kinds._json_tensor import json_value, load_versioned_json
    from tensorsight.summary.kinds._kind import Kind, Raw
    from tensorsight.summary.kinds.tensor_decode import decode_tensor

    KIND = "counters"
    PLUGIN_NAME = "example.counters"
    SCHEMA_VERSION = 1


    @dataclass(frozen=True)
    class CounterRecord:
        """One counter reading: ``count`` events of ``label`` at a step."""

        step: int
        wall_time: float
        label: str
        count: int


    def encode(tag, label, count):
        return json_value(tag, PLUGIN_NAME, {"version": 1, "label": label, "count": count})


    def decode(raw: Raw) -> list[CounterRecord]:
        _, _, arr = decode_tensor(raw.tensor)
        doc = load_versioned_json(bytes(arr.reshape(-1)[0]), what="Counter", tag=raw.tag, known=1)
        return [CounterRecord(raw.step, raw.wall_time, str(doc["label"]), int(doc["count"]))]


    SPEC = Kind(KIND, CounterRecord, PLUGIN_NAME, decode)
    '''
)

SCRIPT = textwrap.dedent(
    """
    import importlib.machinery, json, sys

    LINE = 'KINDS.add("counters", "counters_kind:SPEC")'  # the one registry line

    class AppendLine(importlib.machinery.PathFinder):
        @classmethod
        def find_spec(cls, name, path=None, target=None):
            if name != "tensorsight.summary.kinds":
                return None
            spec = importlib.machinery.PathFinder.find_spec(name, path, target)
            run = spec.loader.exec_module
            def exec_module(module):
                run(module)
                exec(LINE, vars(module))
            spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, AppendLine)
    import counters_kind
    from tensorsight import SummaryWriter, read_logdir
    from tensorsight.data import KINDS as DATA_KINDS, LogdirProvider

    logdir = sys.argv[1]
    with SummaryWriter(logdir + "/run") as w:
        w.add_scalar("loss", 1.0, 0)
        for step in (0, 1, 2):  # the writer method of a kind calls its encode()
            w._add(counters_kind.encode("hits", "cache", 10 * step), step, None)
    logdir_ = read_logdir(logdir)
    records = logdir_.records("run", "counters", "hits")
    provider = LogdirProvider(logdir)
    served = provider.read_records("run", "counters", "hits")
    print(json.dumps({
        "tags": logdir_.tags("run").get("counters"),
        "records": [[r.step, r.label, r.count] for r in records],
        "own_type": all(type(r) is counters_kind.CounterRecord for r in records + served),
        "served": [[r.step, r.count] for r in served],
        "data_kinds": "counters" in DATA_KINDS,
    }))
    """
)


def test_a_kind_file_and_one_registry_line_make_a_readable_kind(tmp_path: Path) -> None:
    (tmp_path / "counters_kind.py").write_text(KIND_FILE, encoding="utf-8")
    env_path = [str(tmp_path), *sys.path]
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "logs")],
        capture_output=True,
        text=True,
        check=False,
        env={"PYTHONPATH": ":".join(env_path), "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["tags"] == ["hits"]
    assert got["records"] == [[0, "cache", 0], [1, "cache", 10], [2, "cache", 20]]
    assert got["served"] == [[0, 0], [1, 10], [2, 20]]
    assert got["own_type"] is True  # the kind's record type, no data-layer copy
    assert got["data_kinds"] is True


def test_a_kind_name_registered_twice_is_refused() -> None:
    import pytest

    from tensorsight.summary.kinds import KINDS

    with pytest.raises(Exception, match="landscapes"):
        KINDS.add("landscapes", "counters_kind:SPEC")
