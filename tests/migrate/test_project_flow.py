"""CUDA values followed across a project's imports (``migrate/_project.py``): a value stored
in one module and used in another is rewritten where it is stored when that is provable,
else listed with both lines."""

from textwrap import dedent

from tensorsight.migrate import migrate
from tensorsight.migrate._project import module_id, project_externals
from tensorsight.migrate.model import Changed
from tensorsight.migrate.selfcheck import compile_problem


def _project(tmp_path, files):
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dedent(text))
    report = migrate(tmp_path, workers=1)
    out = {}
    for result in report.files:
        if isinstance(result, Changed):
            assert compile_problem(result.new_code, result.path) is None, result.new_code
            out[result.path] = result.new_code
    return report, out


def _rows(report, path):
    return [s for s in report.sites if s.file == path]


TRAIN = """\
    import torch
    import torch.distributed as dist
    import config
    from config import gpu

    def main():
        dist.init_process_group(backend=config.backend)
        x = torch.ones(1).to(gpu)
        return torch.load("a.pt", map_location=config.loc), x

    if __name__ == "__main__":
        main()
"""


def test_values_stored_in_a_config_module_follow_their_uses(tmp_path):
    config = 'backend = "nccl"\nloc = "cuda:1"\ngpu = 0\n'
    report, out = _project(tmp_path, {"config.py": config, "train.py": TRAIN})
    # the backend and the location are rewritten where they are stored, as safe fixes
    assert "backend = torch.distributed.get_default_backend_for_device(_device)" in out["config.py"]
    assert 'loc = f"{_device.type}:1"' in out["config.py"]
    rows = {s.line: s for s in _rows(report, "config.py")}
    assert rows[1].status == "rewritten"
    assert "train.py:7" in rows[1].message
    assert rows[2].status == "rewritten"
    assert "train.py:9" in rows[2].message
    # the imported index and the indexed location reach train.py
    assert "torch.ones(1).to(torch.device(_device.type, gpu))" in out["train.py"]
    assert 'config.loc if _device.type != "cpu" else _device' in out["train.py"]


def test_without_the_use_the_stored_value_is_not_a_safe_fix(tmp_path):
    train = TRAIN.replace("dist.init_process_group(backend=config.backend)", "pass")
    train = train.replace('torch.load("a.pt", map_location=config.loc)', "None")
    report, out = _project(tmp_path, {"config.py": 'backend = "nccl"\n', "train.py": train})
    (row,) = _rows(report, "config.py")
    assert row.status == "manual"
    assert row.safety == "unsafe"
    assert "config.py" not in out


def test_a_value_assigned_twice_is_listed_with_both_lines(tmp_path):
    config = 'import os\nbackend = "nccl"\nif os.environ.get("CPU"):\n    backend = "gloo"\n'
    report, out = _project(tmp_path, {"config.py": config, "train.py": TRAIN})
    (row,) = [s for s in _rows(report, "config.py") if s.rule_id == "accelerator/backend-flow"]
    assert row.status == "manual"
    assert row.line == 2
    assert "lines 2, 4" in row.message, row.message
    assert "train.py:7" in row.message, row.message
    assert "config.py" not in out


def test_an_argparse_parser_built_in_another_module(tmp_path):
    args = """\
        import argparse

        def get_args():
            p = argparse.ArgumentParser()
            p.add_argument("--dist-backend", default="nccl", choices=["nccl", "gloo"])
            return p.parse_args()
    """
    train = """\
        import torch.distributed as dist
        from args import get_args

        args = get_args()
        dist.init_process_group(backend=args.dist_backend)
    """
    report, out = _project(tmp_path, {"args.py": args, "train.py": train})
    assert "default=torch.distributed.get_default_backend_for_device(_device)" in out["args.py"]
    default, choices = _rows(report, "args.py")  # the choices accept the new default
    assert default.status == "rewritten"
    assert "train.py:5" in default.message
    assert choices.status == "rewritten"
    assert "choices" in choices.api


def test_a_dataclass_default_read_through_an_instance(tmp_path):
    cfg = """\
        from dataclasses import dataclass

        @dataclass
        class Cfg:
            backend: str = "nccl"
    """
    train = """\
        import torch.distributed as dist
        from pkg.cfg import Cfg

        cfg = Cfg()
        dist.init_process_group(cfg.backend)
    """
    files = {"pkg/__init__.py": "", "pkg/cfg.py": cfg, "train.py": train}
    report, out = _project(tmp_path, files)
    assert (
        "backend: str = torch.distributed.get_default_backend_for_device(_device)"
        in (out["pkg/cfg.py"])
    )
    (row,) = _rows(report, "pkg/cfg.py")
    assert row.status == "rewritten"
    assert "train.py:5" in row.message


def test_the_graph_reads_only_modules_that_can_matter():
    files = {
        "a.py": "x = 1\n",  # nothing CUDA-specific, imports nothing: never parsed
        "b.py": "def broken(:\n",  # would not even parse
        "c.py": 'device_name = "cuda:0"\n',
        "d.py": "from c import device_name\nimport torch\ntorch.ones(1).to(device_name)\n",
    }
    out = project_externals(files)
    assert set(out) == {"c.py", "d.py"}
    assert out["c.py"].uses == {("device", ((), "device_name")): "d.py:3"}
    (held,) = out["d.py"].values[((), "device_name")]
    assert held.cuda
    assert held.indexed
    assert held.where == "c.py:1"


def test_module_ids():
    assert module_id("pkg/mod.py") == "pkg.mod"
    assert module_id("pkg/__init__.py") == "pkg"
    assert module_id("train.py") == "train"


REEXPORT_TRAIN = """\
    import torch
    import torch.distributed as dist
    from pkg import BACKEND, DEVICE

    dist.init_process_group(backend=BACKEND)
    x = torch.ones(1).to(DEVICE)
"""


def test_a_value_re_exported_by_a_package_init_is_followed(tmp_path):
    files = {
        "pkg/__init__.py": "from .config import BACKEND, DEVICE\n",
        "pkg/config.py": 'BACKEND = "nccl"\nDEVICE = "cuda:0"\n',
        "train.py": REEXPORT_TRAIN,
    }
    report, out = _project(tmp_path, files)
    config = out["pkg/config.py"]
    assert "BACKEND = torch.distributed.get_default_backend_for_device(_device)" in config
    assert 'DEVICE = f"{_device.type}:0"' in config
    rows = {s.line: s for s in _rows(report, "pkg/config.py")}
    assert rows[1].status == "rewritten"
    assert "train.py:5" in rows[1].message  # the row names the use, two modules away
    assert "pkg/__init__.py" not in out  # the re-export itself is not touched


def test_a_chain_of_re_exports_and_a_module_attribute(tmp_path):
    train = """\
        import torch.distributed as dist
        import api

        dist.init_process_group(backend=api.BACKEND)
    """
    files = {
        "api.py": "from pkg import BACKEND\n",
        "pkg/__init__.py": "from .sub import BACKEND\n",
        "pkg/sub/__init__.py": "from .settings import BACKEND\n",
        "pkg/sub/settings.py": 'BACKEND = "nccl"\n',
        "train.py": train,
    }
    report, out = _project(tmp_path, files)
    assert "get_default_backend_for_device(_device)" in out["pkg/sub/settings.py"]
    (row,) = _rows(report, "pkg/sub/settings.py")
    assert row.status == "rewritten"
    assert "train.py:4" in row.message


def test_a_cycle_of_re_exports_ends_and_holds_nothing(tmp_path):
    files = {
        "a.py": "from b import BACKEND\n",
        "b.py": "from a import BACKEND\n",
        "train.py": 'import torch.distributed as dist\nfrom a import BACKEND\nprint("nccl")\n'
        "dist.init_process_group(backend=BACKEND)\n",
    }
    out = project_externals(files)  # returns: the cycle is not followed round and round
    assert "train.py" not in out or ((), "BACKEND") not in out["train.py"].values
    report, _ = _project(tmp_path, files)
    assert not [s for s in report.sites if s.status == "rewritten"]


def test_a_chain_longer_than_the_bound_is_not_followed():
    from tensorsight.migrate._project import MAX_HOPS

    n = MAX_HOPS + 2
    files = {f"m{i}.py": f"from m{i + 1} import BACKEND\n" for i in range(n)}
    files[f"m{n}.py"] = 'BACKEND = "nccl"\n'
    use = "import torch.distributed as dist\nfrom m0 import BACKEND\n"
    files["train.py"] = use + "dist.init_process_group(backend=BACKEND)\n"
    assert f"m{n}.py" not in project_externals(files)  # too far: no use reaches it
    files = {k: v for k, v in files.items() if k != "m0.py"}
    files["train.py"] = files["train.py"].replace("m0", "m3")  # a chain within the bound
    out = project_externals(files)
    assert out[f"m{n}.py"].uses == {("backend", ((), "BACKEND")): "train.py:3"}
    (held,) = out["train.py"].values[((), "BACKEND")]
    assert held.nccl
