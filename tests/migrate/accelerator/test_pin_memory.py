from tensorsight.migrate.rules.accelerator.pin_memory import ReplacePinMemoryRule
from tests.migrate._util import PROLOGUE, check


def test_pin_memory_flags():
    check(
        ReplacePinMemoryRule,
        "import torch\nfrom torch.utils.data import DataLoader\n"
        'dl = DataLoader(ds, pin_memory=True, pin_memory_device="cuda")\n',
        "import torch\nfrom torch.utils.data import DataLoader\n"
        + PROLOGUE
        + "dl = DataLoader(ds, pin_memory=torch.accelerator.is_available(), "
        "pin_memory_device=_device.type)\n",
    )


def test_no_op():
    check(ReplacePinMemoryRule, "import torch\ndl = DataLoader(ds, pin_memory=False)\n", None)
