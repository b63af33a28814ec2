from tensorsight.migrate.rules.accelerator.to_index import RULE_ID, ReplaceDeviceIndexRule
from tests.migrate._util import PROLOGUE, check


def test_integer_literal_is_safe():
    check(
        ReplaceDeviceIndexRule,
        "import torch\ny = x.to(0)\nz = torch.ones(1, device=1)\n",
        f"import torch\n{PROLOGUE}y = x.to(torch.device(_device.type, 0))\n"
        "z = torch.ones(1, device=torch.device(_device.type, 1))\n",
    )


def test_rank_variable_is_unsafe_and_reported_by_default():
    before = "import torch\ny = x.to(local_rank)\n"
    out = check(ReplaceDeviceIndexRule, before, None, statuses=[(RULE_ID, "manual")])
    assert out.sites[0].safety == "unsafe"
    assert "--unsafe-fixes" in out.sites[0].message
    check(
        ReplaceDeviceIndexRule,
        before,
        f"import torch\n{PROLOGUE}y = x.to(torch.device(_device.type, local_rank))\n",
        unsafe=True,
        statuses=[(RULE_ID, "rewritten")],
    )


def test_no_op_for_dtypes_and_devices():
    check(
        ReplaceDeviceIndexRule,
        "import torch\ny = x.to(dtype)\nz = x.to(torch.float16)\nw = x.to(device)\n",
        None,
        statuses=[],
    )
