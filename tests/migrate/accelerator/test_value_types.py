"""Values keep their types: a torch.device stays a device, a device string stays a string."""

import pytest
import torch

from tensorsight.migrate.rules.accelerator.device_strings import ReplaceDeviceStringsRule
from tests.migrate._util import PROLOGUE, check, run


@pytest.mark.parametrize(
    ("before", "after"),
    [
        # fast_neural_style: the device object must not become `_device.type if c else "cpu"`
        (
            'd = torch.device("cuda" if use_cuda else "cpu")',
            'd = torch.device(_device.type if use_cuda else "cpu")',
        ),
        (
            'd = torch.device("cpu" if no_cuda else "cuda")',
            'd = torch.device("cpu" if no_cuda else _device.type)',
        ),
        (
            'd = torch.device("cuda:1" if use_cuda else "cpu")',
            'd = torch.device(f"{_device.type}:1" if use_cuda else "cpu")',
        ),
        ('d = torch.device(f"cuda:{i}x")', 'd = torch.device(f"{_device.type}:{i}x")'),
        # strings stay strings
        (
            'device = "cpu" if no_cuda else "cuda"',
            'device = "cpu" if no_cuda else _device.type',
        ),
    ],
)
def test_device_and_string_slots_keep_their_type(before, after):
    check(
        ReplaceDeviceStringsRule,
        f"import torch\n{before}\n",
        f"import torch\n{PROLOGUE}{after}\n",
    )


@pytest.mark.parametrize("flag", [True, False])
def test_migrated_device_is_a_device_on_cpu(flag):
    out = run(
        "accelerator",
        f"""\
        import torch
        use_cuda = {flag}
        device = torch.device("cuda" if use_cuda else "cpu")
        other = torch.device("cpu" if not use_cuda else "cuda")
        name = "cuda" if use_cuda else "cpu"
        kind = device.type
        """,
    )
    namespace: dict[str, object] = {}
    exec(compile(out.new_code, "t.py", "exec"), namespace)
    assert isinstance(namespace["device"], torch.device)
    assert isinstance(namespace["other"], torch.device)
    assert namespace["kind"] == "cpu"  # no accelerator here; either branch is the CPU
    assert namespace["name"] == ("cuda" if flag else "cpu")  # not a device slot: untouched


def test_map_location_conditional_stays_loadable(tmp_path):
    path = tmp_path / "w.pt"
    torch.save({"w": torch.ones(2)}, path)
    out = run(
        "accelerator",
        f"""\
        import torch
        c = True
        state = torch.load({str(path)!r}, map_location="cuda" if c else "cpu", weights_only=True)
        """,
    )
    namespace: dict[str, object] = {}
    exec(compile(out.new_code, "t.py", "exec"), namespace)
    assert namespace["state"]["w"].device.type == "cpu"  # type: ignore[index]
