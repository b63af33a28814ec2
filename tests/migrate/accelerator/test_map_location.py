import pytest
import torch

from tensorsight.migrate.rules.accelerator.map_location import RULE_ID, ReplaceMapLocationRule
from tests.migrate._util import PROLOGUE, check, run


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
        + 'a = torch.load("a.pt", map_location=f"{_device.type}:0" if _device.type != "cpu" '
        "else _device, weights_only=True)\n" + 'b = torch.load("b.pt", map_location=_device)\n',
        statuses=[(RULE_ID, "rewritten"), (RULE_ID, "rewritten"), (RULE_ID, "kept")],
    )


def test_index_is_kept_off_the_cpu_and_lambda_is_manual():
    out = check(
        ReplaceMapLocationRule,
        """\
        import torch
        a = torch.load("a.pt", map_location="cuda:1")
        c = torch.load("c.pt", map_location=f"cuda:{rank}")
        b = torch.load("b.pt", map_location=lambda s, loc: s.cuda())
        d = torch.load("d.pt", map_location={"cuda:0": "cuda:%d" % rank})
        """,
        "import torch\n" + PROLOGUE + 'a = torch.load("a.pt", map_location=f"{_device.type}:1" '
        'if _device.type != "cpu" else _device)\n'
        'c = torch.load("c.pt", map_location=f"{_device.type}:{rank}" '
        'if _device.type != "cpu" else _device)\n'
        'b = torch.load("b.pt", map_location=lambda s, loc: s.cuda())\n'
        'd = torch.load("d.pt", map_location={"cuda:0": "cuda:%d" % rank})\n',
        statuses=[(RULE_ID, "rewritten")] * 2 + [(RULE_ID, "manual")] * 2,
    )
    assert [s.safety for s in out.sites[:2]] == ["safe", "safe"]
    assert "map_location=_device" in out.sites[2].message
    assert "CUDA devices" in out.sites[3].message


def test_indexed_location_loads_on_the_cpu(tmp_path):
    """The rewritten location runs where torch.load refuses "cpu:1"."""
    path = tmp_path / "w.pt"
    torch.save({"w": torch.ones(2)}, path)
    before = (
        f"import torch\nrank = 1\nsd = torch.load({str(path)!r}, map_location=f'cuda:{{rank}}')\n"
    )
    scope: dict[str, dict[str, torch.Tensor]] = {}
    with pytest.raises(RuntimeError):  # the original needs CUDA device 1
        exec(compile(before, "t.py", "exec"), {})
    exec(compile(run(ReplaceMapLocationRule, before).new_code, "t.py", "exec"), scope)
    assert torch.equal(scope["sd"]["w"], torch.ones(2))


def test_no_op():
    check(
        ReplaceMapLocationRule, 'import torch\nt = torch.load("a.pt", map_location="cpu")\n', None
    )


def test_a_cuda_location_dict_reached_through_a_name_is_reported():
    # pytorch/examples' DDP tutorial shape: the dict is built first, then passed by name
    src = """\
        import torch
        def load(rank, path):
            map_location = {"cuda:%d" % 0: "cuda:%d" % rank}
            return torch.load(path, map_location=map_location)
        other = {"cuda:0": "cuda:1"}  # never a map_location: left alone
        """
    out = check(ReplaceMapLocationRule, src, None, statuses=[(RULE_ID, "manual")])
    compile(out.new_code, "t.py", "exec")
    [row] = out.sites
    assert row.line == 3
