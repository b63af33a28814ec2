"""accelerator/autocast, accelerator/grad-scaler and accelerator/custom-fwd."""

import torch

from tensorsight.migrate.rules.accelerator.autocast import RULE_ID as AUTOCAST
from tensorsight.migrate.rules.accelerator.autocast import ReplaceAutocastRule
from tensorsight.migrate.rules.accelerator.custom_fwd import ReplaceCustomFwdRule
from tensorsight.migrate.rules.accelerator.grad_scaler import ReplaceGradScalerRule
from tests.migrate._util import PROLOGUE, check, run


def test_autocast_without_dtype_warns_about_drift():
    out = check(
        ReplaceAutocastRule,
        """\
        import torch
        from torch.cuda.amp import autocast
        with autocast(enabled=True):
            pass
        """,
        f"import torch\n{PROLOGUE}with torch.autocast(_device.type, enabled=True):\n    pass\n",
        statuses=[(AUTOCAST, "rewritten"), (AUTOCAST, "kept")],
    )
    assert "bfloat16 on the CPU" in out.sites[1].message


def test_autocast_with_device_string_and_dtype():
    out = check(
        ReplaceAutocastRule,
        'import torch as T\nwith T.autocast("cuda", dtype=T.bfloat16):\n    pass\n',
        "import torch as T\n"
        + PROLOGUE.replace("torch.", "T.")
        + "with T.autocast(_device.type, dtype=T.bfloat16):\n    pass\n",
        statuses=[(AUTOCAST, "rewritten"), (AUTOCAST, "kept")],
    )
    # the dtype is pinned, so only the per-device op lists are left to warn about
    assert "low precision" in out.sites[1].message
    assert "without dtype" not in out.sites[1].message


def test_autocast_no_op():
    check(ReplaceAutocastRule, 'import torch\nwith torch.autocast("cpu"):\n    pass\n', None)


def test_grad_scaler():
    check(
        ReplaceGradScalerRule,
        "import torch\nscaler = torch.cuda.amp.GradScaler(init_scale=2.0**8)\n",
        f"import torch\n{PROLOGUE}scaler = torch.amp.GradScaler(_device.type, init_scale=2.0**8)\n",
    )
    check(
        ReplaceGradScalerRule,
        'from torch.amp import GradScaler\nscaler = GradScaler("cuda")\n',
        "from torch.amp import GradScaler\n"
        "import torch\n" + PROLOGUE + "scaler = GradScaler(_device.type)\n",
    )


def test_grad_scaler_no_op():
    check(ReplaceGradScalerRule, 'import torch\ns = torch.amp.GradScaler("cpu")\n', None)


CUSTOM = """\
import torch
from torch.cuda.amp import custom_fwd, custom_bwd

class Double(torch.autograd.Function):
    @staticmethod
    @custom_fwd(cast_inputs=torch.float32)
    def forward(ctx, x):
        return x * 2

    @staticmethod
    @custom_bwd
    def backward(ctx, g):
        return g * 2
"""


def test_custom_fwd_runs_on_cpu_after_rewrite():
    out = run(ReplaceCustomFwdRule, CUSTOM)
    assert "@torch.amp.custom_fwd(device_type=_device.type, cast_inputs=torch.float32)" in (
        out.new_code
    )
    assert "@torch.amp.custom_bwd(device_type=_device.type)" in out.new_code
    assert "torch.cuda" not in out.new_code
    namespace: dict[str, object] = {}
    exec(compile(out.new_code, "t.py", "exec"), namespace)
    x = torch.ones(2, requires_grad=True)
    namespace["Double"].apply(x).sum().backward()  # type: ignore[attr-defined]
    assert x.grad is not None
    assert x.grad.tolist() == [2.0, 2.0]


def test_custom_fwd_no_op():
    check(
        ReplaceCustomFwdRule,
        "import torch\n@torch.amp.custom_fwd(device_type='cpu')\ndef f(): ...\n",
        None,
    )
