import torch

from tensorsight.migrate.rules.accelerator.synchronize import ReplaceSynchronizeRule
from tests.migrate._util import PROLOGUE, check, run


def test_synchronize_and_streams():
    check(
        ReplaceSynchronizeRule,
        """\
        import torch
        torch.cuda.synchronize()
        s = torch.cuda.Stream(priority=-1)
        e = torch.cuda.Event(enable_timing=True)
        with torch.cuda.stream(s):
            cur = torch.cuda.current_stream()
        """,
        "import torch\n"
        + PROLOGUE
        + """\
torch.get_device_module(_device).synchronize()
s = torch.Stream(priority=-1, device=_device)
e = torch.Event(enable_timing=True, device=_device)
with torch.get_device_module(_device).stream(s):
    cur = torch.get_device_module(_device).current_stream()
""",
    )


def test_result_runs_on_cpu():
    out = run(
        ReplaceSynchronizeRule, "import torch\ntorch.cuda.synchronize()\ns = torch.cuda.Stream()\n"
    )
    namespace: dict[str, object] = {}
    exec(compile(out.new_code, "t.py", "exec"), namespace)
    assert isinstance(namespace["s"], torch.Stream)


def test_no_op():
    check(ReplaceSynchronizeRule, "import torch\ntorch.cpu.synchronize()\n", None, statuses=[])


def test_positional_event_arguments_are_reported_not_broken():
    out = check(ReplaceSynchronizeRule, "import torch\ne = torch.cuda.Event(True)\n", None)
    assert [(s.status, s.api) for s in out.sites] == [("manual", "torch.cuda.Event")]
