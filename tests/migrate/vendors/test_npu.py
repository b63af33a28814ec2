from tensorsight.migrate.rules.npu import RULESET
from tests.migrate._util import PROLOGUE, check, run


def test_npu_adds_torch_npu_env_vars_and_inherits_accelerator_rules():
    out = check(
        "npu",
        """\
        import os
        import torch
        os.environ["CUDA_VISIBLE_DEVICES"] = "0,1"
        ifname = os.environ.get('NCCL_SOCKET_IFNAME', "eth0")
        x = torch.zeros(1, device="cuda")
        """,
        "import os\nimport torch\nimport torch_npu\n"
        + PROLOGUE
        + """os.environ["ASCEND_RT_VISIBLE_DEVICES"] = "0,1"
ifname = os.environ.get('HCCL_SOCKET_IFNAME', "eth0")
x = torch.zeros(1, device=_device.type)
""",
        target="npu",
        allowed_imports=RULESET.side_effect_imports,
    )
    assert [s.rule_id for s in out.sites] == [
        "npu/import-torch-npu",
        "npu/visible-devices",
        "npu/hccl-env",
        "accelerator/device-strings",
    ]


def test_npu_drift_warnings_for_jit_script_and_float64():
    out = run(
        "npu",
        """\
        import torch
        @torch.jit.script
        def f(x):
            return x.double()
        y = torch.zeros(1, dtype=torch.float64).cuda()
        """,
        target="npu",
    )
    by_rule = {(s.rule_id, s.status) for s in out.sites}
    assert ("npu/jit-script", "kept") in by_rule
    assert ("npu/float64", "kept") in by_rule
    assert sum(s.rule_id == "npu/float64" for s in out.sites) == 2


def test_npu_no_op():
    check("npu", "import torch\nx = torch.ones(1)\n", None, target="npu", statuses=[])
