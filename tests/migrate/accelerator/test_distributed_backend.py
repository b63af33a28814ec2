from tensorsight.migrate.rules.accelerator.distributed_backend import (
    RULE_ID,
    ReplaceDistributedBackendRule,
)
from tests.migrate._util import PROLOGUE, check

NEW = "torch.distributed.get_default_backend_for_device(_device)"


def test_init_process_group_backend_and_import_torch_added():
    check(
        ReplaceDistributedBackendRule,
        'import torch.distributed as dist\ndist.init_process_group("nccl", init_method="env://")\n',
        "import torch.distributed as dist\nimport torch\n"
        + PROLOGUE
        + f'dist.init_process_group({NEW}, init_method="env://")\n',
    )
    check(
        ReplaceDistributedBackendRule,
        'import torch\ng = torch.distributed.new_group(ranks, backend="nccl")\n',
        f"import torch\n{PROLOGUE}g = torch.distributed.new_group(ranks, backend={NEW})\n",
    )


def test_nccl_comparison_is_unsafe():
    before = 'import torch\nimport torch.distributed as dist\nok = dist.get_backend() == "nccl"\n'
    out = check(ReplaceDistributedBackendRule, before, None, statuses=[(RULE_ID, "manual")])
    assert out.sites[0].safety == "unsafe"
    check(
        ReplaceDistributedBackendRule,
        before,
        "import torch\nimport torch.distributed as dist\n"
        + PROLOGUE
        + f"ok = dist.get_backend() == {NEW}\n",
        unsafe=True,
    )


def test_no_op():
    check(
        ReplaceDistributedBackendRule,
        'import torch.distributed as dist\ndist.init_process_group("gloo")\nname = "nccl"\n',
        None,
        statuses=[],
    )
