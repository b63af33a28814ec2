from tensorsight.migrate.rules.accelerator.map_location import RULE_ID, ReplaceMapLocationRule
from tests.migrate._util import PROLOGUE, check


def test_string_and_missing_map_location():
    check(
        ReplaceMapLocationRule,
        """\
        import torch
        a = torch.load("a.pt", map_location="cuda:0", weights_only=True)
        b = torch.load("b.pt")
        """,
        "import torch\n"
        + PROLOGUE
        + 'a = torch.load("a.pt", map_location=_device, weights_only=True)\n'
        + 'b = torch.load("b.pt", map_location=_device)\n',
        statuses=[(RULE_ID, "rewritten"), (RULE_ID, "rewritten"), (RULE_ID, "kept")],
    )


def test_other_index_is_unsafe_and_lambda_is_manual():
    out = check(
        ReplaceMapLocationRule,
        """\
        import torch
        a = torch.load("a.pt", map_location="cuda:1")
        b = torch.load("b.pt", map_location=lambda s, loc: s.cuda())
        """,
        None,
        statuses=[(RULE_ID, "manual"), (RULE_ID, "manual")],
    )
    assert out.sites[0].safety == "unsafe"
    assert "map_location=_device" in out.sites[1].message


def test_no_op():
    check(
        ReplaceMapLocationRule, 'import torch\nt = torch.load("a.pt", map_location="cpu")\n', None
    )
