"""Values followed through names: backend-flow, device-flow, ddp-device-ids, device-type-tests,
and to-index with integer names (issue 19, items 3 and 4)."""

import ast

import torch

from tensorsight.migrate._flow import argparse_dest, collect_flow, format_fields_are_positional
from tensorsight.migrate.rules.accelerator.backend_flow import FollowBackendRule
from tensorsight.migrate.rules.accelerator.ddp_device_ids import GuardDdpDeviceIdsRule
from tensorsight.migrate.rules.accelerator.device_flow import FollowDeviceStringsRule
from tensorsight.migrate.rules.accelerator.device_tests import ReplaceDeviceTypeTestsRule
from tensorsight.migrate.rules.accelerator.to_index import ReplaceDeviceIndexRule
from tests.migrate._util import PROLOGUE, check, run

BACKEND = "torch.distributed.get_default_backend_for_device(_device)"
DIST = "import torch\nimport torch.distributed as dist\n"


def test_flow_facts_slots_and_kinds():
    flow = collect_flow(
        ast.parse(
            "backend = 'nccl'\n"
            "dist.init_process_group(backend=args.backend)\n"
            "self.gpu_id = int(os.environ['LOCAL_RANK'])\n"
            "copy = self.gpu_id\n"
            "mixed = 0\nmixed = dev\n"
            "loc = 'cuda:{}'.format(gpu)\n"
            "torch.load(p, map_location=loc)\n"
            "kind = x.device.type\n"
            "def f(rank: int, other): pass\n"
        )
    )
    assert flow.backend_slots == {"backend"}
    assert {"gpu_id", "copy", "rank"} <= flow.index_slots
    assert not {"mixed", "other"} & flow.index_slots  # one non-integer assignment is enough
    assert flow.indexed_slots == {"loc"}
    assert "loc" in flow.map_location_slots
    assert "kind" in flow.device_type_slots
    assert "loc" not in flow.device_type_slots
    assert argparse_dest(["-b", "--dist-backend"], None) == "dist_backend"
    assert argparse_dest(["--x"], "y") == "y"
    assert format_fields_are_positional("cuda:{}")
    assert not format_fields_are_positional("{0}:{n}")


def test_backend_variable_passed_to_init_process_group():
    check(
        FollowBackendRule,
        DIST + "backend = 'nccl'  # 'nccl', 'gloo'\ndist.init_process_group(backend=backend)\n",
        DIST + PROLOGUE + f"backend = {BACKEND}  # 'nccl', 'gloo'\n"
        "dist.init_process_group(backend=backend)\n",
        statuses=[("accelerator/backend-flow", "rewritten")],
    )


def test_backend_argparse_default_and_choices():
    before = (
        DIST + "import argparse\np = argparse.ArgumentParser()\n"
        'p.add_argument("--dist-backend", default="nccl", choices=["nccl", "gloo"])\n'
        "args = p.parse_args()\ndist.init_process_group(args.dist_backend)\n"
    )
    out = run(FollowBackendRule, before)
    assert f'default={BACKEND}, choices=["nccl", "gloo", {BACKEND}]' in out.new_code
    assert [s.status for s in out.sites] == ["rewritten", "rewritten"]


def test_backend_dataclass_field_and_config_dict():
    out = run(
        FollowBackendRule,
        DIST + "class Cfg:\n    backend: str = 'nccl'\n"
        "CONFIG = {'backend': 'nccl', 'name': 'nccl'}\n"
        "def setup(cfg):\n    dist.init_process_group(cfg.backend)\n",
    )
    assert f"backend: str = {BACKEND}" in out.new_code
    assert f"{{'backend': {BACKEND}, 'name': 'nccl'}}" in out.new_code
    assert [s.status for s in out.sites] == ["rewritten", "rewritten", "manual"]


def test_backend_not_passed_on_is_reported_not_rewritten():
    before = DIST + "DIST_BACKEND = 'nccl'\ncomm = 'nccl'\n"
    out = check(FollowBackendRule, before, None)
    assert [(s.status, s.safety) for s in out.sites] == [("manual", "unsafe"), ("manual", "none")]
    assert "DIST_BACKEND" in out.sites[0].message
    assert "--unsafe-fixes" in out.sites[0].message
    assert "`comm`" in out.sites[1].message
    check(FollowBackendRule, DIST + "backend = 'gloo'\ndist.init_process_group(backend)\n", None)


def test_format_and_fstring_device_strings_through_names():
    before = (
        "import torch\n"
        "loc = 'cuda:{}'.format(args.gpu)\n"
        "ckpt = torch.load(path, map_location=loc)\n"
        'dev = f"cuda:{rank}"\n'
        "x = x.to(dev)\n"
        "y = y.to('cuda:{}'.format(i))\n"
    )
    after = (
        f"import torch\n{PROLOGUE}"
        "loc = '{}:{}'.format(_device.type, args.gpu)\n"
        'ckpt = torch.load(path, map_location=loc if _device.type != "cpu" else _device)\n'
        'dev = f"{_device.type}:{rank}"\n'
        "x = x.to(dev)\n"
        "y = y.to('{}:{}'.format(_device.type, i))\n"
    )
    out = check(FollowDeviceStringsRule, before, after)
    assert [s.status for s in out.sites] == ["rewritten"] * 4
    assert "cpu:1" in out.sites[1].message


def test_device_string_stored_but_not_used_as_device_is_reported():
    out = check(FollowDeviceStringsRule, "import torch\nname = 'cuda:0'\nprint(name)\n", None)
    assert [(s.status, s.line) for s in out.sites] == [("manual", 2)]
    check(FollowDeviceStringsRule, "import torch\nloc = 'cpu:{}'.format(i)\nx.to(loc)\n", None)


def test_device_option_default_and_choices():
    out = run(
        "accelerator",
        "import argparse\nimport torch\np = argparse.ArgumentParser()\n"
        "p.add_argument('--gpu-dev', default='cuda', choices=['cuda', 'cpu'])\n"
        "args = p.parse_args()\nx = x.to(args.gpu_dev)\n",
    )
    assert "default=_device.type, choices=['cuda', 'cpu', _device.type]" in out.new_code


def test_ddp_device_ids_and_output_device_only_off_the_cpu():
    head = "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
    guard = ' if _device.type != "cpu" else None'
    check(
        GuardDdpDeviceIdsRule,
        head + "m = DDP(m, device_ids=[rank], output_device=rank)\nn = DDP(n, ids)\n"
        "o = DDP(o, device_ids=None)\np = DDP(p)\n",
        head + PROLOGUE + f"m = DDP(m, device_ids=[rank]{guard}, output_device=rank{guard})\n"
        f"n = DDP(n, ids{guard})\no = DDP(o, device_ids=None)\np = DDP(p)\n",
        statuses=[("accelerator/ddp-device-ids", "rewritten")] * 3,
    )


def test_nanogpt_device_type_idiom_tests_the_accelerator():
    before = (
        "import torch\n"
        "device = 'cuda'\n"
        "device_type = 'cuda' if 'cuda' in device else 'cpu'\n"
        "if device_type == 'cuda':\n    x = x.pin_memory()\n"
        "fused = x.device.type != 'cuda'\n"
    )
    after = (  # no `_device` is needed: the tests name no device
        "import torch\n"
        "device = 'cuda'\n"
        "device_type = torch.device(device).type\n"
        'if device_type != "cpu":\n    x = x.pin_memory()\n'
        'fused = x.device.type == "cpu"\n'
    )
    out = check(ReplaceDeviceTypeTestsRule, before, after)
    assert [s.line for s in out.sites] == [3, 4, 6]  # the `in` test is part of line 3's row
    assert all(s.status == "rewritten" and "Drift:" in s.message for s in out.sites)
    # What the rewrite computes: the accelerator's type, whatever it is called.
    for value in ("cuda", "cuda:1", "xpu:0", "mps", "cpu"):
        assert torch.device(value).type == value.partition(":")[0]


def test_device_test_on_strings_is_unsafe_and_unknown_values_are_reported():
    before = (
        "import torch\n"
        "if args.device == 'cuda':\n    pass\n"
        "ok = 'cuda' in args.device\n"
        "bad = mode == 'cuda'\n"
    )
    out = run(ReplaceDeviceTypeTestsRule, before)
    assert 'torch.device(args.device).type != "cpu"' in out.new_code
    assert "args.device == 'cuda'" in out.new_code  # unsafe: not applied by default
    assert [(s.status, s.safety) for s in out.sites] == [
        ("manual", "unsafe"),
        ("rewritten", "safe"),
        ("manual", "none"),
    ]
    assert "`mode` is compared" in out.sites[2].message
    check(
        ReplaceDeviceTypeTestsRule, "import torch\nok = device_type == 'cpu'\n", None, statuses=[]
    )


def test_integer_names_make_to_index_safe():
    before = (
        "import os\nimport torch\n"
        "class T:\n    def __init__(self, m):\n"
        "        self.gpu_id = int(os.environ['LOCAL_RANK'])\n"
        "        self.m = m.to(self.gpu_id)\n"
    )
    out = check(
        ReplaceDeviceIndexRule,
        before,
        before.replace("import torch\n", "import torch\n" + PROLOGUE).replace(
            "m.to(self.gpu_id)", "m.to(torch.device(_device.type, self.gpu_id))"
        ),
    )
    assert out.sites[0].safety == "safe"
    mixed = before + "        self.gpu_id = torch.device('cpu')\n"
    out = check(ReplaceDeviceIndexRule, mixed, None)
    assert out.sites[0].safety == "unsafe"


SPAWN_SCRIPT = (
    "import torch\nimport torch.multiprocessing as mp\n"
    "class Worker:\n"
    "    def __init__(self, model, gpu):\n"
    "        self.gpu = gpu\n"
    "        self.model = model.to(gpu)\n"
    "    def step(self, x):\n"
    "        return self.model(x.to(self.gpu))\n"
    "def work(k, world):\n"
    "    w = Worker(torch.nn.Linear(2, 2), k)\n"
    "    w.step(torch.randn(1, 2).to(k * 2 + 1))\n"
    "def launch(fn, world):\n"
    "    mp.spawn(fn, args=(world,), nprocs=world)\n"
    'if __name__ == "__main__":\n'
    "    launch(work, 2)\n"
)


def _to_index_safety(code: str) -> list[str]:
    return [s.safety for s in run(ReplaceDeviceIndexRule, code).sites]


def test_parameters_fed_by_spawn_and_int_call_sites_are_indices():
    """``mp.spawn(fn)`` through a launcher parameter, a constructor argument, ``self.gpu``."""
    flow = collect_flow(ast.parse(SPAWN_SCRIPT))
    assert {"k", "gpu", "world"} <= flow.index_slots
    out = run(ReplaceDeviceIndexRule, SPAWN_SCRIPT)
    assert [s.safety for s in out.sites] == ["safe"] * 3
    assert "model.to(torch.device(_device.type, gpu))" in out.new_code
    assert "x.to(torch.device(_device.type, self.gpu))" in out.new_code
    assert ".to(torch.device(_device.type, k * 2 + 1))" in out.new_code


def test_int_call_sites_of_a_script_function():
    script = (
        "import torch\ndef main(dev, n):\n    m = torch.nn.Linear(n, n).to(dev)\n"
        'if __name__ == "__main__":\n    dev = 0\n    main(dev, n=3)\n'
    )
    assert _to_index_safety(script) == ["safe"]
    # one call site passing a device is enough to leave it alone (no hint in the name)
    assert _to_index_safety(script + "    main(torch.device('cpu'), 3)\n") == []


def test_parameters_are_not_followed_where_callers_are_unknown():
    """Planted cases: not a script, a function that escapes, an unreadable call."""
    not_a_script = SPAWN_SCRIPT.replace('if __name__ == "__main__":\n    ', "")
    assert "k" not in collect_flow(ast.parse(not_a_script)).index_slots
    escapes = SPAWN_SCRIPT + "    handlers = [work]\n"
    assert "k" not in collect_flow(ast.parse(escapes)).index_slots
    starred = SPAWN_SCRIPT + "    work(*sys.argv)\n"
    assert "k" not in collect_flow(ast.parse(starred)).index_slots
    launcher_calls_it = SPAWN_SCRIPT.replace(
        "    mp.spawn(fn,", "    fn(torch.device('cpu'), world)\n    mp.spawn(fn,"
    )
    flow = collect_flow(ast.parse(launcher_calls_it))
    assert "k" not in flow.index_slots
    for code in (not_a_script, escapes, launcher_calls_it):
        # `.to(gpu)` and `.to(self.gpu)` unsafe (a hint in the name), `.to(k * 2 + 1)` left
        assert _to_index_safety(code) == ["unsafe", "unsafe"]


def test_a_device_read_from_another_object_is_not_an_index():
    """word_language_model's ``device = src.device`` then ``.to(device)``: the slot ``device``
    is copied from another object's attribute, which says nothing about an integer."""
    code = (
        "import torch\nclass M(torch.nn.Module):\n"
        "    def __init__(self, device):\n        self.device = device\n"
        "    def forward(self, src):\n        device = src.device\n"
        "        return torch.ones(2).to(device)\n"
        'if __name__ == "__main__":\n    M(0)\n'
    )
    flow = collect_flow(ast.parse(code))
    assert (("M", "forward"), "device") not in flow.index
    # per scope: the constructor's parameter, passed 0 by the one call, is an index
    assert (("M", "__init__"), "device") in flow.index
    check(ReplaceDeviceIndexRule, code, None, statuses=[])


def test_a_parameter_only_passed_on_to_itself_gets_no_value():
    """``f(k)`` with ``k`` unknown: the copy of a slot onto itself proves nothing."""
    code = (
        "import torch\ndef f(k):\n    return torch.ones(1).to(k)\n"
        'if __name__ == "__main__":\n    f(k)\n    f(k=k)\n'
    )
    assert "k" not in collect_flow(ast.parse(code)).index_slots
    assert _to_index_safety(code) == []


def test_values_are_per_scope():
    """Two functions' ``k`` are two keys: one holding an index does not depend on the other
    (a parameter nobody calls), and the unknown one is not made an index by it."""
    code = (
        "import torch\n"
        "def f():\n    k = 0\n    return torch.ones(1).to(k)\n"
        "def g(k):\n    return torch.ones(1).to(k)\n"
    )
    flow = collect_flow(ast.parse(code))
    assert (("f",), "k") in flow.index
    assert (("g",), "k") not in flow.index
    out = run("accelerator", code)
    assert "torch.ones(1).to(torch.device(_device.type, k))" in out.new_code
    assert out.new_code.count("_device.type, k") == 1, out.new_code


def test_a_module_name_read_in_a_function_is_the_module_key():
    code = "import torch\nk = 1\ndef f():\n    return torch.ones(1).to(k)\n"
    flow = collect_flow(ast.parse(code))
    assert ((), "k") in flow.index
    assert "to(torch.device(_device.type, k))" in run("accelerator", code).new_code
