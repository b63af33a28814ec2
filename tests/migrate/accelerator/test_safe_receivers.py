"""The default run migrates the common case: ``.cuda()`` on tensors and modules by
construction is a safe fix; unknown receivers stay listed as manual."""

import torch

from tensorsight.migrate import migrate
from tensorsight.migrate._values import scan_module_classes
from tensorsight.migrate.rules.accelerator.cuda_method import RULE_ID, ReplaceCudaMethodRule
from tests.migrate._util import check, run

SCRIPT = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)


class Trainer:
    def __init__(self):
        self.model = Net().cuda()

    def step(self, x):
        return self.model.cuda()(x)


def train(model, train_loader):
    for i, (data, target) in enumerate(train_loader):
        data, target = data.cuda(non_blocking=True), target.cuda()
        loss = nn.functional.cross_entropy(model(data), target)
    for batch in train_loader:
        x, y = batch
        x = x.cuda()
        first = batch[0].cuda()
    return loss


ds = TensorDataset(torch.randn(8, 4), torch.randint(0, 2, (8,)))
train_loader = DataLoader(ds, batch_size=4)
model = Net().cuda()
head = nn.Linear(2, 2).cuda()
weights = torch.load(PATH, weights_only=True).cuda()
for p in model.parameters():
    p.data = p.data.cuda()
for name, buf in model.named_buffers():
    buf.cuda()
loss = train(model, train_loader)
t = Trainer()
out = t.step(torch.randn(2, 4).cuda())
device_ids = [0]
labels = torch.zeros(3, dtype=torch.int64).random_(2).cuda(device_ids[0])
"""


def test_default_run_rewrites_tensors_and_modules_by_construction(tmp_path):
    weights = tmp_path / "w.pt"
    torch.save(torch.ones(2), weights)
    out = run(ReplaceCudaMethodRule, SCRIPT.replace("PATH", repr(str(weights))))
    cuda_sites = [s for s in out.sites if s.rule_id == RULE_ID]
    assert len(cuda_sites) == 13
    assert [s for s in cuda_sites if s.status != "rewritten"] == []
    assert ".cuda(" not in out.new_code
    # and the migrated script runs on this CPU-only machine
    namespace: dict[str, object] = {}
    exec(compile(out.new_code, "train.py", "exec"), namespace)
    assert namespace["out"].shape == (2, 2)  # type: ignore[attr-defined]


def test_unknown_receivers_stay_listed():
    out = check(
        ReplaceCudaMethodRule,
        """\
        import torch
        from torch.utils.data import DataLoader
        loader = DataLoader(ds, collate_fn=my_collate)
        for batch in loader:
            batch = batch.cuda()
        thing = make_thing().cuda()
        def f(model):
            return model.cuda()
        """,
        None,
        statuses=[(RULE_ID, "manual")] * 3,
    )
    assert all(s.safety == "unsafe" for s in out.sites)


def test_a_name_also_assigned_from_elsewhere_is_not_a_loader():
    check(
        ReplaceCudaMethodRule,
        """\
        import torch
        loader = torch.utils.data.DataLoader(ds)
        loader = wrap(loader)
        for x in loader:
            x.cuda()
        """,
        None,
        statuses=[(RULE_ID, "manual")],
    )


def test_project_scan_follows_bases_across_files_and_refuses_clashes():
    classes = scan_module_classes(
        [
            b"import torch.nn as nn\nclass Base(nn.Module):\n    pass\n",
            b"from .base import Base\nclass ResNet(\n    Base,\n):\n    pass\n",
            b"class Tool:\n    pass\nclass Block(torch.nn.Sequential): pass\n",
            b"class Tool(nn.Module): pass\n",  # two different `Tool`s: not safe
        ]
    )
    assert classes == {"Base", "ResNet", "Block"}


def test_module_class_of_another_file_is_safe_in_a_project(tmp_path):
    (tmp_path / "models.py").write_text("import torch.nn as nn\nclass Net(nn.Module):\n    pass\n")
    (tmp_path / "train.py").write_text(
        "import torch\nfrom models import Net\nnet = Net()\nnet.cuda()\nother.cuda()\n"
    )
    report = migrate(tmp_path, workers=1)
    by_line = {s.line: s for s in report.sites if s.file == "train.py"}
    assert (by_line[4].status, by_line[4].safety) == ("rewritten", "safe")
    assert by_line[5].status == "manual"


BY_CONSTRUCTION = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self.scale = nn.Parameter(torch.ones(2))

    def forward(self, x):
        return self.fc(x) * self.scale.cuda()


def step(model: nn.Module, x: torch.Tensor, net: "Net", w: nn.Parameter):
    model.cuda()
    net.cuda()
    w.cuda()
    return model(x.cuda())


def train(a, b):
    for (x, y), (u, v) in zip(a, b):
        x.cuda(), v.cuda()
    for i, (p, q) in enumerate(zip(a, b)):
        p[0].cuda()
    for batch in a:
        inputs, labels = batch[0], batch[1]
        inputs.cuda(), labels.cuda()


ds = TensorDataset(torch.randn(8, 4), torch.randint(0, 2, (8,)))
a = DataLoader(ds, batch_size=4)
b = DataLoader(ds, batch_size=4)
train(a, b)
x = torch.randn(2, 4)
both = torch.cat([x, x]).cuda()
flat = x.float().view(1, -1).cuda()
turned = x.reshape(4, 2).permute(1, 0).unsqueeze(0).cuda()
shrunk: torch.Tensor = flat.squeeze(0)
shrunk.cuda()
out = step(Net(), x, Net(), nn.Parameter(torch.zeros(1)))
"""


def test_more_receivers_by_construction_are_safe_and_run():
    """torch calls and tensor methods, nn.Parameter, zip of loaders, annotated parameters,
    element-wise tuples of a batch: every `.cuda()` is rewritten and the script runs."""
    out = run(ReplaceCudaMethodRule, BY_CONSTRUCTION)
    cuda_sites = [s for s in out.sites if s.rule_id == RULE_ID]
    assert len(cuda_sites) == 14
    assert [(s.line, s.status) for s in cuda_sites if s.status != "rewritten"] == []
    assert ".cuda(" not in out.new_code
    namespace: dict[str, object] = {}
    exec(compile(out.new_code, "train.py", "exec"), namespace)
    assert namespace["out"].shape == (2, 2)  # type: ignore[attr-defined]
    assert namespace["turned"].shape == (1, 2, 4)  # type: ignore[attr-defined]


def test_progress_bars_and_torchvision_builders_by_import():
    """tqdm passes a loader's batches through; torchvision.models builders build modules
    (not `get_weight`). Checked on the rewrite only: neither package is needed here."""
    out = run(
        ReplaceCudaMethodRule,
        """\
        import torch
        import tqdm
        from torch.utils.data import DataLoader
        from torchvision import models
        from torchvision.models import get_weight, resnet50
        loader = DataLoader(ds)
        for i, (x, y) in enumerate(tqdm.tqdm(loader)):
            x.cuda()
        m = models.resnet18(weights=None)
        m.cuda()
        resnet50().cuda()
        get_weight("ResNet50_Weights.DEFAULT").cuda()
        """,
    )
    assert [s.status for s in out.sites] == ["rewritten"] * 3 + ["manual"]
    compile(out.new_code, "t.py", "exec")


def test_still_unknown_receivers_stay_manual():
    """A module's output (may be a tuple), a method chain on an unknown object, `.view` of
    something not known to be a tensor, a loader of a `zip` that is not a loader."""
    out = run(
        ReplaceCudaMethodRule,
        """\
        import torch
        from torch.utils.data import DataLoader
        m = torch.nn.Linear(2, 2)
        out = m(x)
        out.cuda()
        thing.view(1).cuda()
        a = DataLoader(ds)
        for (x, y), (u, v) in zip(a, other):
            u.cuda()
        def f(t: "Thing", u: torch.Tensor | str):
            t.cuda(), u.cuda()
        """,
    )
    assert [(s.status, s.safety) for s in out.sites] == [("manual", "unsafe")] * 5


def test_optional_annotations():
    out = run(
        ReplaceCudaMethodRule,
        """        from typing import Optional
        import torch
        def f(a: Optional[torch.Tensor], b: torch.Tensor | None, c: "Optional[torch.nn.Module]"):
            return a.cuda(), b.cuda(), c.cuda()
        """,
    )
    assert [s.status for s in out.sites] == ["rewritten"] * 3


def _cuda_rows(code):
    out = run("accelerator", code)
    rows = [s for s in out.sites if s.rule_id == RULE_ID]
    return out, {s.line: s.status for s in rows}


def test_a_forward_input_passed_to_a_torch_layer_is_a_tensor():
    code = """\
        import torch
        import torch.nn as nn
        class Embed(nn.Module):
            def __init__(self):
                super().__init__()
                self.table = nn.Embedding(10, 4)
            def forward(self, tokens, extra):
                if torch.cuda.is_available():
                    tokens = tokens.cuda()
                    extra = extra.cuda()
                return self.table(tokens)
        """
    out, rows = _cuda_rows(code)
    assert rows == {9: "rewritten", 10: "manual"}, out.sites  # `extra` is never used as one
    assert "tokens = tokens.to(_device)" in out.new_code


def test_a_forward_input_of_a_class_that_is_not_a_module_stays_manual():
    code = """\
        import torch.nn.functional as F
        class Helper:
            def forward(self, x):
                return F.relu(x.cuda())
        """
    _, rows = _cuda_rows(code)
    assert rows == {4: "manual"}


def test_torchvision_tensor_transforms_make_tensors():
    code = """\
        import torch
        from torchvision import transforms
        from torchvision.transforms import ToTensor
        to_tensor = ToTensor()
        prep = transforms.Compose([transforms.Resize(8), transforms.ToTensor()])
        crop = transforms.Compose([transforms.CenterCrop(8)])
        a = to_tensor(img).view(1, -1).cuda()
        b = prep(img).cuda()
        c = transforms.functional.to_tensor(img).cuda()
        d = crop(img).cuda()
        """
    out, rows = _cuda_rows(code)
    # a PIL-to-PIL pipeline (`crop`) gives no tensor: its `.cuda()` stays listed
    assert rows == {7: "rewritten", 8: "rewritten", 9: "rewritten", 10: "manual"}, out.sites


def test_cuda_with_an_index_the_flow_proves():
    """``.cuda(device)`` where ``device`` is a constructor parameter that every call passes an
    RPC target's rank from a loop over ``[0, 1]``: an integer, so the rewrite is safe."""
    code = """\
        import torch
        import torch.distributed.rpc as rpc
        class Model(torch.nn.Module):
            def __init__(self, device):
                super().__init__()
                self.fc = torch.nn.Linear(2, 2).cuda(device)
        def trainer(rank):
            return Model(rank)
        def other(d):
            return torch.nn.Linear(2, 2).cuda(d)
        if __name__ == "__main__":
            for r in [0, 1]:
                rpc.rpc_async("w", trainer, args=(r,))
        """
    out, rows = _cuda_rows(code)
    assert rows == {6: "rewritten", 10: "manual"}, out.sites
    assert "torch.nn.Linear(2, 2).to(torch.device(_device.type, device))" in out.new_code
