from tensorsight.migrate.rules.accelerator.backend_knobs import RULE_ID, ReplaceBackendKnobsRule
from tests.migrate._util import check


def test_tf32_switch_and_cudnn_knobs():
    out = check(
        ReplaceBackendKnobsRule,
        """\
        import torch
        torch.backends.cuda.matmul.allow_tf32 = True  # speed
        torch.backends.cuda.matmul.allow_tf32 = flag
        torch.backends.cudnn.benchmark = True
        torch.backends.cuda.matmul.allow_tf32 = False
        """,
        """\
        import torch
        torch.set_float32_matmul_precision("high")  # speed
        torch.set_float32_matmul_precision("high" if flag else "highest")
        torch.backends.cudnn.benchmark = True
        torch.set_float32_matmul_precision("highest")
        """,
        statuses=[
            (RULE_ID, "rewritten"),
            (RULE_ID, "kept"),
            (RULE_ID, "rewritten"),
            (RULE_ID, "kept"),
            (RULE_ID, "kept"),
            (RULE_ID, "rewritten"),  # False -> "highest", the default: nothing drifts
        ],
    )
    assert out.sites[1].message.startswith("Drift:")
    assert "CPU (oneDNN)" in out.sites[1].message


def test_no_op():
    check(ReplaceBackendKnobsRule, "import torch\ntorch.backends.mkldnn.enabled = True\n", None)


def test_reading_a_knob_into_a_variable_is_not_setting_it():
    check(
        ReplaceBackendKnobsRule,
        """\
        import torch
        old = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = old
        """,
        """\
        import torch
        old = torch.backends.cuda.matmul.allow_tf32
        torch.set_float32_matmul_precision("high" if old else "highest")
        """,
    )
