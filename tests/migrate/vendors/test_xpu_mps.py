from tests.migrate._util import PROLOGUE, check, run


def test_xpu_visible_devices_and_float64():
    out = check(
        "xpu",
        "import os\nimport torch\n"
        'os.environ["CUDA_VISIBLE_DEVICES"] = "0"\n'
        'x = torch.zeros(1, dtype=torch.float64, device="cuda")\n',
        "import os\nimport torch\n"
        + PROLOGUE
        + 'os.environ["ZE_AFFINITY_MASK"] = "0"\n'
        + "x = torch.zeros(1, dtype=torch.float64, device=_device.type)\n",
        target="xpu",
    )
    assert [s.rule_id for s in out.sites] == [
        "xpu/visible-devices",
        "xpu/float64",
        "accelerator/device-strings",
    ]


def test_mps_float64_and_distributed_are_unsupported():
    out = run(
        "mps",
        """\
        import torch
        import torch.distributed as dist
        dist.init_process_group("nccl")
        x = torch.zeros(1, dtype=torch.double)
        """,
        target="mps",
    )
    statuses = {(s.rule_id, s.status) for s in out.sites}
    assert ("mps/distributed", "unsupported") in statuses
    assert ("mps/float64", "unsupported") in statuses
    assert ("accelerator/distributed-backend", "rewritten") in statuses


def test_vendor_no_ops():
    for target in ("xpu", "mps"):
        check(target, 'import os\nv = os.environ["HOME"]\n', None, target=target, statuses=[])
