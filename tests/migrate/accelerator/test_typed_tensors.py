import torch

from tensorsight.migrate.rules.accelerator.typed_tensors import RULE_ID, ReplaceTypedTensorsRule
from tests.migrate._util import PROLOGUE, check, run


def test_constructors():
    out = check(
        ReplaceTypedTensorsRule,
        "import torch\na = torch.cuda.FloatTensor([1, 2])\nb = torch.cuda.LongTensor(2, 3)\n",
        "import torch\n"
        + PROLOGUE
        + "a = torch.tensor([1, 2], dtype=torch.float32, device=_device)\n"
        + "b = torch.empty(2, 3, dtype=torch.int64, device=_device)\n",
    )
    namespace: dict[str, object] = {}
    exec(compile(out.new_code, "t.py", "exec"), namespace)
    assert namespace["b"].dtype == torch.int64  # type: ignore[attr-defined]


def test_type_conversion_is_unsafe_and_isinstance_is_manual():
    out = run(
        ReplaceTypedTensorsRule,
        "import torch\ny = x.type(torch.cuda.HalfTensor)\n"
        "ok = isinstance(y, torch.cuda.HalfTensor)\n",
        unsafe=True,
    )
    assert "y = x.to(device=_device, dtype=torch.float16)" in out.new_code
    assert [(s.line, s.status) for s in out.sites] == [(2, "rewritten"), (3, "manual")]
    assert all(s.rule_id == RULE_ID for s in out.sites)


def test_no_op():
    check(ReplaceTypedTensorsRule, "import torch\na = torch.FloatTensor([1])\n", None, statuses=[])
