from tensorsight.migrate.rules.accelerator.current_device import ReplaceCurrentDeviceRule
from tests.migrate._util import PROLOGUE, check


def test_set_device_statement_becomes_guarded_block_keeping_comment():
    check(
        ReplaceCurrentDeviceRule,
        """\
        import torch
        torch.cuda.set_device(rank)  # one GPU per process
        """,
        """\
        import torch
        if torch.accelerator.is_available():
            torch.accelerator.set_device_index(rank)  # one GPU per process
        """,
    )


def test_current_device_in_expression_is_parenthesised():
    check(
        ReplaceCurrentDeviceRule,
        """\
        import torch as T
        idx = T.cuda.current_device() + 1
        """,
        """\
        import torch as T
        idx = (T.accelerator.current_device_index() if T.accelerator.is_available() else 0) + 1
        """,
    )


def test_device_context_manager_uses_device_module():
    check(
        ReplaceCurrentDeviceRule,
        "import torch\nwith torch.cuda.device(1):\n    pass\n",
        f"import torch\n{PROLOGUE}with torch.get_device_module(_device).device(1):\n    pass\n",
    )


def test_no_op():
    check(ReplaceCurrentDeviceRule, "import torch\nd = torch.device('cpu')\n", None, statuses=[])
