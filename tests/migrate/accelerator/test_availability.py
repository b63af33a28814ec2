from tensorsight.migrate.rules.accelerator.availability import RULE_ID, ReplaceAvailabilityRule
from tests.migrate._util import check


def test_is_available_and_device_count():
    check(
        ReplaceAvailabilityRule,
        """\
        import torch
        if torch.cuda.is_available():  # keep me
            n = torch.cuda.device_count()
        """,
        """\
        import torch
        if torch.accelerator.is_available():  # keep me
            n = torch.accelerator.device_count()
        """,
        statuses=[(RULE_ID, "rewritten"), (RULE_ID, "rewritten")],
    )


def test_aliases_are_resolved_and_dead_imports_removed():
    check(
        ReplaceAvailabilityRule,
        """\
        import torch as T
        from torch.cuda import is_available as has_gpu
        cuda = T.cuda
        a = has_gpu()
        b = cuda.device_count()
        """,
        """\
        import torch as T
        cuda = T.cuda
        a = T.accelerator.is_available()
        b = T.accelerator.device_count()
        """,
    )


def test_from_import_without_torch_adds_import_torch():
    out = check(
        ReplaceAvailabilityRule,
        """\
        from torch.cuda import device_count
        n = device_count()
        """,
        """\
        import torch
        n = torch.accelerator.device_count()
        """,
    )
    assert out.sites[0].api == "torch.cuda.device_count"
    assert (out.sites[0].line, out.sites[0].column) == (2, 5)


def test_no_op_on_other_code():
    check(
        ReplaceAvailabilityRule,
        """\
        import torch
        import mylib
        ok = mylib.cuda.is_available()
        text = "torch.cuda.is_available()"
        """,
        None,
        statuses=[],
    )
