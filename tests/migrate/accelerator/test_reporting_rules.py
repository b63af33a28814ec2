"""nvtx, is-cuda, unsupported, triton and unmapped."""

from tensorsight.migrate.rules.accelerator.is_cuda import ReplaceIsCudaRule
from tensorsight.migrate.rules.accelerator.nvtx import ReplaceNvtxRule
from tensorsight.migrate.rules.accelerator.triton import ReportTritonKernelsRule
from tensorsight.migrate.rules.accelerator.unmapped import ReportUnmappedCudaRule
from tensorsight.migrate.rules.accelerator.unsupported import ReportUnsupportedRule
from tests.migrate._util import check


def test_nvtx():
    out = check(
        ReplaceNvtxRule,
        'import torch\nwith torch.cuda.nvtx.range("fwd"):\n    torch.cuda.nvtx.range_push("x")\n',
        "import torch\n"
        'with torch.profiler.record_function("fwd"):\n    torch.cuda.nvtx.range_push("x")\n',
    )
    assert [s.status for s in out.sites] == ["rewritten", "manual"]
    assert "record_function" in out.sites[1].message


def test_is_cuda_safety_depends_on_receiver():
    out = check(
        ReplaceIsCudaRule,
        "import torch\nt = torch.ones(1)\na = t.is_cuda\nb = obj.is_cuda\n",
        'import torch\nt = torch.ones(1)\na = t.device.type != "cpu"\nb = obj.is_cuda\n',
    )
    assert [(s.status, s.safety) for s in out.sites] == [
        ("rewritten", "safe"),
        ("manual", "unsafe"),
    ]


def test_unsupported_has_concrete_advice():
    out = check(ReportUnsupportedRule, "import torch\ng = torch.cuda.CUDAGraph()\n", None)
    [site] = out.sites
    assert site.status == "unsupported"
    assert "torch.compile" in site.message


def test_triton_kernel_is_listed():
    out = check(
        ReportTritonKernelsRule,
        "import triton\n@triton.jit\ndef kernel(x):\n    pass\n",
        None,
    )
    assert [(s.api, s.status) for s in out.sites] == [("triton.jit", "manual")]


def test_unmapped_cuda_api_is_never_silent():
    out = check(
        ReportUnmappedCudaRule,
        "import torch\ntorch.cuda.ipc_collect()\nf = torch.cuda.get_arch_list\n",
        None,
    )
    assert [(s.api, s.status) for s in out.sites] == [
        ("torch.cuda.ipc_collect", "manual"),
        ("torch.cuda.get_arch_list", "manual"),
    ]
    assert all(s.message for s in out.sites)


def test_reporting_rules_no_op():
    for rule in (ReplaceNvtxRule, ReplaceIsCudaRule, ReportUnsupportedRule, ReportUnmappedCudaRule):
        check(rule, "import torch\nx = torch.ones(1)\nprint(x.device)\n", None, statuses=[])
