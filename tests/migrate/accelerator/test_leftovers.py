"""CUDA values no rule could place are listed; device meshes, tuple tests and count gates."""

from tests.migrate._util import PROLOGUE, check

_FULL = "accelerator"


def _rows(out):
    return [(s.line, s.api, s.rule_id, s.status) for s in out.sites]


def test_cuda_strings_left_as_they_were_are_listed():
    out = check(
        _FULL,
        """\
        import os
        import torch
        name = os.environ.get("DEVICE", "cuda")
        def f(x, device="cuda"):
            return x
        args = ("cuda:1",) + (1,)
        loc = f"cuda:{name}"
        print("running on cuda", "cuda is fast")
        """,
        None,
    )
    assert _rows(out) == [
        (3, '"cuda"', "accelerator/unmapped", "manual"),
        (4, '"cuda"', "accelerator/unmapped", "manual"),
        (6, '"cuda:1"', "accelerator/unmapped", "manual"),
        (7, "CUDA device string", "accelerator/device-flow", "manual"),
    ]
    assert "_device.type" in out.sites[0].message


def test_a_rewritten_or_reported_string_is_not_listed_twice():
    out = check(
        _FULL,
        """\
        import torch
        d = torch.device("cuda")
        x = torch.zeros(1, device="cuda:0")
        backends = {"cuda": "nccl", "xpu": "ccl"}
        """,
        "import torch\n"
        + PROLOGUE
        + 'd = _device\nx = torch.zeros(1, device=f"{_device.type}:0")\n'
        + 'backends = {"cuda": "nccl", "xpu": "ccl"}\n',
    )
    # one row per site: the device rewrites, and the backend name (not the per-type key)
    assert [(line, status) for line, _, _, status in _rows(out)] == [
        (2, "rewritten"),
        (3, "rewritten"),
        (4, "manual"),
    ]
    assert out.sites[2].rule_id == "accelerator/backend-flow"


def test_profiler_cuda_activity_is_listed():
    out = check(
        _FULL,
        """\
        import torch
        acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        """,
        None,
    )
    [site] = out.sites
    assert (site.api, site.status) == ("torch.profiler.ProfilerActivity.CUDA", "manual")
    assert "supported_activities" in site.message


def test_device_mesh_type_is_the_prologue_device_type():
    check(
        _FULL,
        """\
        import torch
        from torch.distributed.device_mesh import init_device_mesh
        mesh = init_device_mesh("cuda", (2, 2), mesh_dim_names=("dp", "tp"))
        """,
        "import torch\nfrom torch.distributed.device_mesh import init_device_mesh\n"
        + PROLOGUE
        + 'mesh = init_device_mesh(_device.type, (2, 2), mesh_dim_names=("dp", "tp"))\n',
        statuses=[("accelerator/device-strings", "rewritten")],
    )


def test_device_type_in_a_tuple():
    out = check(
        _FULL,
        """\
        import torch
        def f(device, amp_dtype):
            if device.type in ("cuda",) and amp_dtype == torch.float16:
                return 1
            if device.type in ("cuda", "xpu"):
                return 2
        """,
        """\
        import torch
        def f(device, amp_dtype):
            if device.type != "cpu" and amp_dtype == torch.float16:
                return 1
            if device.type in ("cuda", "xpu"):
                return 2
        """,
    )
    assert [(s.line, s.status) for s in out.sites] == [(3, "rewritten"), (5, "manual")]
    assert "Drift" in out.sites[0].message
    assert "(cuda, xpu)" in out.sites[1].message


def test_a_check_for_more_devices_than_the_cpu_has_is_listed():
    out = check(
        _FULL,
        """\
        import torch
        if __name__ == "__main__":
            n_gpus = torch.cuda.device_count()
            if n_gpus < 8:
                print("needs 8")
            ok = torch.cuda.device_count() >= 2
            if n_gpus > 0:
                pass
        """,
        """\
        import torch
        if __name__ == "__main__":
            n_gpus = torch.accelerator.device_count()
            if n_gpus < 8:
                print("needs 8")
            ok = torch.accelerator.device_count() >= 2
            if n_gpus > 0:
                pass
        """,
    )
    assert [(s.line, s.api, s.status) for s in out.sites] == [
        (3, "torch.cuda.device_count", "rewritten"),
        (4, "torch.cuda.device_count() comparison", "manual"),
        (6, "torch.cuda.device_count", "rewritten"),
        (6, "torch.cuda.device_count() comparison", "manual"),
    ]
    assert "checks for 8 devices" in out.sites[1].message
