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


def test_a_share_of_the_devices_per_process_is_one_device_on_the_cpu():
    before = (
        "import torch\n"
        "n = torch.cuda.device_count() // local_world_size\n"
        "m = 2 * (torch.cuda.device_count() // w) + 1\n"
        "total = torch.cuda.device_count() * 2\n"
    )
    guard = " if torch.accelerator.is_available() else 1"
    after = (
        "import torch\n"
        f"n = torch.accelerator.device_count() // local_world_size{guard}\n"
        f"m = 2 * (torch.accelerator.device_count() // w{guard}) + 1\n"
        "total = torch.accelerator.device_count() * 2\n"  # not a share: unchanged
    )
    out = check(ReplaceAvailabilityRule, before, after)
    drift = [s for s in out.sites if s.status == "kept"]
    assert [(s.line, s.api) for s in drift] == [
        (2, "torch.cuda.device_count() // n"),
        (3, "torch.cuda.device_count() // n"),
    ]
    assert "each process now gets one device, the CPU" in drift[0].message
    namespace = {"torch": __import__("torch"), "local_world_size": 2, "w": 4}
    exec(out.new_code, namespace)  # on this CPU-only torch: one device each
    assert (namespace["n"], namespace["m"], namespace["total"]) == (1, 3, 0)


def test_one_process_per_device_starts_one_process_on_the_cpu():
    before = (
        "import torch\n"
        "import torch.multiprocessing as mp\n"
        "world_size = torch.cuda.device_count()\n"
        "mp.spawn(main, args=(world_size,), nprocs=world_size)\n"
        "mp.spawn(main, (2,), torch.cuda.device_count())\n"
        "n = torch.cuda.device_count()\n"
        "print(n)\n"
    )
    guarded = "torch.accelerator.device_count() if torch.accelerator.is_available() else 1"
    after = (
        "import torch\n"
        "import torch.multiprocessing as mp\n"
        f"world_size = {guarded}\n"
        "mp.spawn(main, args=(world_size,), nprocs=world_size)\n"
        f"mp.spawn(main, (2,), {guarded})\n"
        "n = torch.accelerator.device_count()\n"  # not a number of processes: unchanged
        "print(n)\n"
    )
    out = check(ReplaceAvailabilityRule, before, after)
    drift = [(s.line, s.api) for s in out.sites if s.status == "kept"]
    api = "torch.cuda.device_count() as nprocs"
    assert drift == [(3, api), (5, api)]
