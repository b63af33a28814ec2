from tensorsight.migrate.rules.accelerator.cuda_method import RULE_ID, ReplaceCudaMethodRule
from tests.migrate._util import PROLOGUE, check, run


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


def test_a_remote_call_result_stays_unsafe_and_the_row_says_why():
    out = run(
        "accelerator",
        """\
        import torch
        from torch.distributed.nn import RemoteModule

        class Trainer(torch.nn.Module):
            def __init__(self, ps_rref, remote_emb):
                super().__init__()
                self.ps_rref = ps_rref
                self.remote_emb = remote_emb
                self.emb = RemoteModule("ps", torch.nn.EmbeddingBag, args=(10, 4))

            def forward(self, indices, offsets, d):
                model = self.ps_rref.rpc_sync().get_model().cuda()
                a = self.remote_emb.forward(indices, offsets)
                b = self.emb.forward(indices, offsets)
                return model, a.cuda(d), b.cuda(d), offsets.float().cuda(d)
        """,
    )
    rows = {(s.line, s.column): s for s in out.sites if s.rule_id == RULE_ID}
    remote = [rows[12, 17], rows[15, 23], rows[15, 34]]
    assert [s.status for s in remote] == ["manual"] * 3
    assert "`self.ps_rref.rpc_sync().get_model()` is what a remote call returns" in (
        remote[0].message
    )
    assert "`a` holds what a remote call returns" in remote[1].message
    assert "`b` holds what a remote call returns" in remote[2].message  # a RemoteModule
    plain = rows[15, 45]  # not remote: the plain reason
    assert "the receiver may not be a tensor or module" in plain.message
    assert "remote" not in plain.message
