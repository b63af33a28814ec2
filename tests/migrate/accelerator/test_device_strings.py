import pytest

from tensorsight.migrate.rules.accelerator.device_strings import RULE_ID, ReplaceDeviceStringsRule
from tests.migrate._util import PROLOGUE, check


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ('d = torch.device("cuda")', "d = _device"),
        ('d = torch.device("cuda:1")', "d = torch.device(_device.type, 1)"),
        ('d = torch.device(f"cuda:{rank}")', "d = torch.device(_device.type, rank)"),
        ('d = torch.device("cuda", 2)', "d = torch.device(_device.type, 2)"),
        (
            'd = torch.device("cuda" if torch.cuda.is_available() else "cpu")',
            "d = _device",
        ),
        ('x = torch.zeros(2, device="cuda")', "x = torch.zeros(2, device=_device.type)"),
        ("x = torch.zeros(2, device='cuda:0')", 'x = torch.zeros(2, device=f"{_device.type}:0")'),
        ('y = x.to("cuda", non_blocking=True)', "y = x.to(_device.type, non_blocking=True)"),
        ('DEVICE = "cuda"', "DEVICE = _device.type"),
        ('self.device = "cuda:0"', 'self.device = f"{_device.type}:0"'),
        (
            'device = "cuda" if use_gpu else "cpu"',
            'device = _device.type if use_gpu else "cpu"',
        ),
        (
            'p.add_argument("--device", default="cuda")',
            'p.add_argument("--device", default=_device.type)',
        ),
    ],
)
def test_device_slots(before, after):
    check(
        ReplaceDeviceStringsRule,
        f"import torch\n{before}\n",
        f"import torch\n{PROLOGUE}{after}\n",
    )


def test_strings_outside_device_slots_are_left_alone():
    check(
        ReplaceDeviceStringsRule,
        """\
        import torch
        print("running on cuda")
        name = "cuda"
        backend_name = "cuda:0"
        log = {"device": "cuda"}
        x = torch.zeros(2, device=torch.device("cpu"))
        """,
        None,
        statuses=[],
    )


def test_site_row():
    out = check(
        ReplaceDeviceStringsRule,
        'import torch\nx = torch.ones(1, device="cuda")\n',
        f"import torch\n{PROLOGUE}x = torch.ones(1, device=_device.type)\n",
    )
    [site] = out.sites
    assert (site.line, site.column, site.rule_id, site.status, site.safety) == (
        2,
        26,
        RULE_ID,
        "rewritten",
        "safe",
    )
    assert site.doc_url.endswith("#acceleratordevice-strings")
