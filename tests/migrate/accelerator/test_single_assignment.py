"""device-flow rewrites a value through a name only when it is the name's one assignment in
its scope (issue 19, item 3): every way of assigning a name again makes the site manual."""

import ast

import pytest

from tensorsight.migrate._bindings import ANY, collect_bindings
from tensorsight.migrate.rules.accelerator.device_flow import FollowDeviceStringsRule
from tests.migrate._util import PROLOGUE, check, run

HEAD = "import torch\n"
LOAD = "ck = torch.load(p, map_location=loc)\n"

#: name -> code that assigns ``loc`` a second time, after ``loc = f"cuda:{rank}"``.
AGAIN = {
    "if": 'if c:\n    loc = "cpu"\n',
    "loop": "for i in range(n):\n    loc = f'cuda:{i}'\n",
    "augmented": "loc += suffix\n",
    "tuple": "loc, other = pick()\n",
    "starred": "*loc, other = pick()\n",
    "with": "with pick() as loc:\n    pass\n",
    "for": "for loc in locs:\n    pass\n",
    "walrus": "if (loc := pick()):\n    pass\n",
    "global": "def cpu():\n    global loc\n    loc = 'cpu'\n",
    "import": "from elsewhere import loc\n",
    "except": "try:\n    pass\nexcept OSError as loc:\n    pass\n",
}


@pytest.mark.parametrize("again", sorted(AGAIN))
def test_a_name_assigned_twice_is_reported_not_rewritten(again):
    before = HEAD + 'loc = f"cuda:{rank}"\n' + AGAIN[again] + "x = x.to(loc)\n" + LOAD
    out = run(FollowDeviceStringsRule, before)
    compile(out.new_code, "t.py", "exec")
    assert 'loc = f"cuda:{rank}"' in out.new_code  # the stored value is not rewritten
    rows = [(s.line, s.status, s.safety) for s in out.sites]
    assert rows[0] == (2, "manual", "unsafe")
    # the load's guard is right whatever `loc` holds: the one rewrite made
    load = before.count("\n")
    assert rows[-1] == (load, "rewritten", "safe")
    assert all(status == "manual" for _, status, _ in rows[:-1])
    assert 'map_location=loc if _device.type != "cpu" else _device' in out.new_code
    assert "`loc` is assigned 2 times (lines 2, " in out.sites[0].message
    assert "--unsafe-fixes" in out.sites[0].message
    # the stored value and the load's guard are the fix the user is offered
    applied = run(FollowDeviceStringsRule, before, unsafe=True)
    assert 'loc = f"{_device.type}:{rank}"' in applied.new_code
    assert 'map_location=loc if _device.type != "cpu" else _device' in applied.new_code
    compile(applied.new_code, "t.py", "exec")


def test_self_attribute_assigned_in_two_methods():
    before = (
        HEAD + "class T:\n"
        "    def __init__(self, r):\n        self.loc = f'cuda:{r}'\n"
        "    def to_cpu(self):\n        self.loc = 'cpu'\n"
        "    def go(self, x):\n        return x.to(self.loc)\n"
    )
    out = check(FollowDeviceStringsRule, before, None)
    assert [(s.line, s.status, s.safety) for s in out.sites] == [(4, "manual", "unsafe")]
    assert "`self.loc` is assigned 2 times (lines 4, 6)" in out.sites[0].message
    once = before.replace("        self.loc = 'cpu'\n", "        pass\n")
    after = once.replace(HEAD, HEAD + PROLOGUE).replace("f'cuda:{r}'", "f'{_device.type}:{r}'")
    check(FollowDeviceStringsRule, once, after, statuses=[("accelerator/device-flow", "rewritten")])


def test_option_default_assigned_again_through_args():
    before = (
        HEAD + "import argparse\np = argparse.ArgumentParser()\n"
        "p.add_argument('--gpu-dev', default='cuda:0', choices=['cuda:0', 'cpu'])\n"
        "args = p.parse_args()\nif c:\n    args.gpu_dev = 'cpu'\nx = x.to(args.gpu_dev)\n"
    )
    out = check(FollowDeviceStringsRule, before, None)  # neither default nor choices change
    assert [(s.line, s.status) for s in out.sites] == [(4, "manual")]
    assert "`gpu_dev` is assigned 2 times (lines 4, 7)" in out.sites[0].message  # the dest


def test_single_assignments_are_rewritten_as_before():
    """One assignment per scope: two functions, a loop body, a local shadowing a global."""
    before = (
        HEAD + 'loc = f"cuda:{rank}"\n'
        "def a(r, x):\n    loc = f'cuda:{r}'\n    return x.to(loc)\n"
        "def b(r):\n    loc = 'cuda:{}'.format(r)\n    return torch.load(p, map_location=loc)\n"
        "def c(x):\n    for i in range(2):\n        dev = f'cuda:{i}'\n        x = x.to(dev)\n"
        "x = x.to(loc)\n"
    )
    after = (
        HEAD + PROLOGUE + 'loc = f"{_device.type}:{rank}"\n'
        "def a(r, x):\n    loc = f'{_device.type}:{r}'\n    return x.to(loc)\n"
        "def b(r):\n    loc = '{}:{}'.format(_device.type, r)\n"
        '    return torch.load(p, map_location=loc if _device.type != "cpu" else _device)\n'
        "def c(x):\n    for i in range(2):\n        dev = f'{_device.type}:{i}'\n"
        "        x = x.to(dev)\n"
        "x = x.to(loc)\n"
    )
    out = check(FollowDeviceStringsRule, before, after)
    assert [(s.status, s.safety) for s in out.sites] == [("rewritten", "safe")] * 5
    compile(out.new_code, "t.py", "exec")


def test_bindings_follow_python_scopes():
    bindings = collect_bindings(
        ast.parse(
            "loc = 1\n"
            "def f():\n    loc = 2\n    def g():\n        nonlocal loc\n        loc = 3\n"
            "class C:\n    loc: str = 'a'\n    def m(self):\n        self.loc = 'b'\n"
            "    def n(self):\n        print(loc)\n"
            "args.loc = 4\ncfg['loc'] = 5\n"
            "def h(loc):\n    loc = loc + 1\n"
        )
    )
    lines = bindings.lines
    assert lines[((), "loc")] == (1,)
    assert lines[(("f",), "loc")] == (3, 6)  # nonlocal: g assigns f's name
    assert lines[(("C",), ".loc")] == (8, 10)  # class field and self.loc are one
    assert lines[(ANY, "loc")] == (13, 14)
    assert lines[(("h",), "loc")] == (16,)  # a parameter is not counted
    assert bindings.key_of_name(("C", "n"), "loc") == ((), "loc")  # class bodies do not enclose


def test_whole_rule_set_on_a_device_assigned_twice():
    """nanoGPT's shape: ``device = 'cuda'``, under DDP ``device = f'cuda:{rank}'``, then
    ``torch.load(map_location=device)``: both strings are rewritten where they stand (a
    name that says device), and the load's guard, right whatever ``device`` holds, too."""
    before = (
        "import os\nimport torch\n"
        "device = 'cuda'\n"
        "if int(os.environ.get('RANK', -1)) != -1:\n"
        "    device = f'cuda:{int(os.environ[\"LOCAL_RANK\"])}'\n"
        "def resume(path):\n"
        "    return torch.load(path, map_location=device)\n"
    )
    out = run("accelerator", before)
    compile(out.new_code, "train.py", "exec")
    assert "device = _device.type\n" in out.new_code
    assert 'map_location=device if _device.type != "cpu" else _device)' in out.new_code
    flow = [s for s in out.sites if s.rule_id == "accelerator/device-flow"]
    assert [(s.line, s.status, s.safety) for s in flow] == [(7, "rewritten", "safe")]
