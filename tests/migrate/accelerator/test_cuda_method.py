from tensorsight.migrate.rules.accelerator.cuda_method import RULE_ID, ReplaceCudaMethodRule
from tests.migrate._util import PROLOGUE, check


def test_known_receivers_are_safe():
    check(
        ReplaceCudaMethodRule,
        """\
        import torch
        from torch import nn
        class Net(nn.Module):
            pass
        model = Net()
        model.cuda()
        x = torch.randn(2).cuda(non_blocking=True)
        def f(t: torch.Tensor):
            return t.cuda(1)
        """,
        f"""\
import torch
from torch import nn
{PROLOGUE}class Net(nn.Module):
    pass
model = Net()
model.to(_device)
x = torch.randn(2).to(_device, non_blocking=True)
def f(t: torch.Tensor):
    return t.to(torch.device(_device.type, 1))
""",
        statuses=[(RULE_ID, "rewritten")] * 3,
    )


def test_unknown_receiver_needs_unsafe_fixes():
    before = "import torch\nbatch = batch.cuda()\n"
    out = check(ReplaceCudaMethodRule, before, None, statuses=[(RULE_ID, "manual")])
    assert "batch.to(_device)" in out.sites[0].message
    check(
        ReplaceCudaMethodRule,
        before,
        f"import torch\n{PROLOGUE}batch = batch.to(_device)\n",
        unsafe=True,
    )


def test_no_op_for_torch_cuda_module_and_attributes():
    check(
        ReplaceCudaMethodRule,
        "import torch\nm = torch.cuda\nflag = args.cuda\n",
        None,
        statuses=[],
    )
