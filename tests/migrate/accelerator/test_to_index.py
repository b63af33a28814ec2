from textwrap import dedent

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


def test_an_item_of_a_list_of_device_indices_is_an_index():
    body = dedent(
        """\
        def demo(rank, n):
            device_ids = list(range(rank * n, (rank + 1) * n))
            first = device_ids[0]
            a = torch.ones(1).to(device_ids[0])
            b = torch.ones(1).to(first)
            gpus = [0, 1]
            c = torch.ones(1).to(gpus[1])
            names = ["cpu", "cuda:0"]
            d = torch.ones(1).to(names[0])
            return a, b, c, d
        """
    )
    fixed = body
    for arg in ("device_ids[0]", "first", "gpus[1]"):
        fixed = fixed.replace(f".to({arg})", f".to(torch.device(_device.type, {arg}))")
    check(
        "accelerator",
        "import torch\n" + body,
        "import torch\n" + PROLOGUE + fixed,  # a list of strings has no index in it
    )
