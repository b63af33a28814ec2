"""Capture levels come from CAPTURE_BACKENDS: a new level, candidates per level, errors."""

from __future__ import annotations

from importlib import metadata

import pytest
import torch
from torch.nn.modules.module import register_module_forward_hook

import tensorsight
from tensorsight.capture import LEVELS, read_dump
from tensorsight.capture.backends import (
    CAPTURE_BACKENDS,
    CaptureBackend,
    candidates,
    levels,
    select,
)
from tensorsight.capture.backends.torch_api import TorchApiCapture
from tensorsight.capture.backends.torch_ops import TorchOpCapture
from tensorsight.errors import CaptureError, UsageError
from tests.capture.conftest import TinyMLP, train_step

GROUP = "tensorsight.capture_backends"


class ModuleOutputCapture(CaptureBackend):
    """A third party's level ``outputs``: each module's forward output, nothing else."""

    level = "outputs"

    def _start(self) -> None:
        self._handle = register_module_forward_hook(self._on_output)

    def _stop(self) -> None:
        self._handle.remove()

    def _on_output(self, module, args, output):
        rec = self.recorder
        name = f"outputs.{type(module).__name__}"
        if isinstance(output, torch.Tensor) and rec.wants(name, ""):
            rec.commit(name, "forward", "", rec.snapshot([("output.0", output)]))


class Refusing(CaptureBackend):
    """A variant of level ``api`` that records nothing it is asked to."""

    level = "api"
    implementation = "refusing"

    @classmethod
    def unavailable(cls, options):
        return f"refuses mode {options['mode']!r}"

    def _start(self) -> None:
        raise AssertionError("never chosen")

    def _stop(self) -> None:
        pass


@pytest.fixture
def installed(monkeypatch):
    """CAPTURE_BACKENDS as seen where a package declares, in ``tensorsight.capture_backends``,
    the new level ``outputs``, a variant ``api/refusing`` and a broken ``api/broken``."""
    eps = [
        metadata.EntryPoint(name="outputs", value=f"{__name__}:ModuleOutputCapture", group=GROUP),
        metadata.EntryPoint(name="api/refusing", value=f"{__name__}:Refusing", group=GROUP),
        metadata.EntryPoint(name="api/broken", value="no_such_package_xyz:Capture", group=GROUP),
    ]
    real = metadata.entry_points

    def entry_points(**kwargs):
        return eps if kwargs.get("group") == GROUP else real(**kwargs)

    monkeypatch.setattr(metadata, "entry_points", entry_points)
    for attr in ("_entries", "_loaded", "_errors"):
        monkeypatch.setattr(CAPTURE_BACKENDS, attr, dict(getattr(CAPTURE_BACKENDS, attr)))
    monkeypatch.setattr(CAPTURE_BACKENDS, "_scanned", False)


def _options(**changes):
    return {"level": "op", "mode": "statistics", "stack": False, **changes}


def test_built_in_levels_and_their_candidates():
    assert levels()[:3] == LEVELS == ("op", "module", "api")
    assert candidates("op") == ("op/native", "op")  # native first, the dispatch mode last
    assert candidates("module") == ("module",)
    assert candidates("nope") == ()


def test_native_op_capture_is_a_candidate_that_can_decline(monkeypatch):
    monkeypatch.setenv("TENSORSIGHT_CAPTURE", "python")
    assert select(_options()) is TorchOpCapture
    monkeypatch.setenv("TENSORSIGHT_CAPTURE", "auto")
    assert select(_options(mode="tensor")) is TorchOpCapture  # native: statistics only
    assert select(_options(stack=True)) is TorchOpCapture


def test_a_registered_level_dumps_and_compares(installed, tmp_path):
    assert levels() == ("op", "module", "api", "outputs")

    def run(path, bug):
        torch.manual_seed(0)
        model = TinyMLP()
        if bug:
            with torch.no_grad():
                model.layers[2].weight.mul_(1.5)
        with tensorsight.dump(path, level="outputs", mode="tensor") as d:
            d.run_step(train_step, model, torch.ones(3, 4))

    run(tmp_path / "bench", bug=False)
    run(tmp_path / "target", bug=True)
    dump = read_dump(tmp_path / "bench")
    assert dump.complete
    assert dump.manifest().level == "outputs"
    assert "capture" not in dump.manifest().extra  # one candidate: nothing to say
    ops = [o.op for o in dump.step().ops]
    assert ops == [
        "outputs.Linear", "outputs.ReLU", "outputs.Linear", "outputs.Sequential", "outputs.TinyMLP"
    ]  # fmt: skip

    same = tensorsight.compare(tmp_path / "bench", tmp_path / "bench")
    assert same.agrees
    bug = tensorsight.compare(tmp_path / "bench", tmp_path / "target")
    assert bug.first_divergence is not None
    assert bug.first_divergence.op == "outputs.Linear"
    assert bug.first_divergence.index == 2  # the second Linear, where the bug is


def test_a_declining_or_broken_variant_leaves_the_level_to_the_next(installed, tmp_path):
    assert candidates("api") == ("api/refusing", "api/broken", "api")
    assert select(_options(level="api")) is TorchApiCapture
    with tensorsight.dump(tmp_path / "d", level="api") as d:
        d.run_step(train_step, TinyMLP(), torch.ones(3, 4))
    assert read_dump(tmp_path / "d").manifest().extra["capture"] == "python"


def test_no_able_candidate_names_each_reason(installed, monkeypatch):
    monkeypatch.delitem(CAPTURE_BACKENDS._entries, "api")  # only the two variants are left
    with pytest.raises(CaptureError) as info:
        select(_options(level="api", mode="md5"))
    message = str(info.value)
    assert message.startswith(
        "Dump level 'api': no capture backend can record it (api/refusing: refuses mode 'md5'; "
        "api/broken: Capture backend 'api/broken' is unavailable: ModuleNotFoundError"
    )
    assert message.endswith("Registered levels: op, module, outputs, api.")  # api: its variants


def test_an_unknown_level_lists_the_registered_ones(installed, tmp_path):
    with pytest.raises(UsageError) as info:
        tensorsight.dump(tmp_path / "d", level="output")
    assert str(info.value) == (
        "Dump level 'output': unknown. Expected one of op, module, api, outputs."
    )
