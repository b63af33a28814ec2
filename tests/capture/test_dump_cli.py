"""``tensorsight dump -- python train.py``: a run recorded without changing its code."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tensorsight import cli
from tensorsight.capture import read_dump
from tensorsight.capture._launch import parse_int_list, parse_size, resolve_command
from tensorsight.errors import UsageError

# A tiny training run: 4 optimizer steps; argv[1] = what to do after them.
TRAIN = """\
import sys
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(16, 4)
print("main", __name__, sys.argv[1:], flush=True)
{open}
for i in range(4):
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    {step}
end = sys.argv[1] if len(sys.argv) > 1 else "ok"
if end == "raise":
    raise ValueError("boom after 4 steps")
if end.startswith("exit"):
    sys.exit(int(end[4:]))
if end.startswith("quit"):
    exit(int(end[4:]))  # the builtin a script may call instead of sys.exit
if end == "wait":
    open("ready", "w").close()
    import time
    time.sleep(60)
"""


def _script(tmp_path: Path, name: str = "train.py", api: str | None = None) -> Path:
    if api is None:
        text = TRAIN.format(open="", step="")
    else:  # the same run through the Python API: everything inside the dump, step at step()
        body = TRAIN.format(open="", step="d.step()")
        head, loop = body.split("\nfor i", 1)
        loop, tail = ("for i" + loop).split("\nend =", 1)
        text = (
            "import tensorsight\n"
            + f"with tensorsight.dump({api!r}) as d:\n"
            + textwrap.indent(head + "\n" + loop, "    ")
            + "\nend ="
            + tail
        )
    path = tmp_path / name
    path.write_text(text)
    return path


def _env(**extra: str) -> dict[str, str]:
    # ``python`` in a command line means this interpreter, as in an activated environment
    # (CI runs .venv/bin/pytest without activating it: PATH's python has no torch)
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return {**os.environ, "PATH": path, "PYTHONWARNINGS": "ignore", **extra}


def _dump(tmp_path: Path, *args: str, env: dict[str, str] | None = None):
    return subprocess.run(
        [sys.executable, "-m", "tensorsight", "dump", *args],
        capture_output=True, text=True, cwd=tmp_path, env=env or _env(), timeout=120,
        check=False,
    )  # fmt: skip


def _rows(step):
    return [(o.op, o.direction, o.module_path, [t.tensor for t in o.tensors]) for o in step.ops]


def test_a_script_is_recorded_step_by_step_and_ends_complete(tmp_path):
    _script(tmp_path)
    out = _dump(tmp_path, "-o", "d", "--", "python", "train.py", "ok", "--lr", "1")
    assert out.returncode == 0, out.stderr
    # the script ran as if run directly: __main__, its own argv
    assert out.stdout.splitlines() == ["main __main__ ['ok', '--lr', '1']"]
    assert "wrote " in out.stderr
    assert "rank0: steps 0-3, complete" in out.stderr
    d = read_dump(tmp_path / "d")
    assert d.ranks == [0]
    assert d.complete
    assert d.steps(0) == [0, 1, 2, 3]
    manifest = d.manifest(0)
    assert manifest is not None
    assert manifest.command_line == ("train.py", "ok", "--lr", "1")
    for s in (1, 2, 3):  # each step: one forward, one backward, one SGD update
        ops = [o.op for o in d.step(0, s).ops]
        assert ops.count("aten.addmm.default") == 2
        assert "aten.threshold_backward.default" in ops
        assert ops.count("tensorsight.param_grad") == 4
        assert any(o.startswith("aten.add_") for o in ops)  # the update itself
    # step 0 also holds the set-up before the first step (the model's initialisation)
    assert "aten.uniform_.default" in [o.op for o in d.step(0, 0).ops]
    assert "aten.uniform_.default" not in [o.op for o in d.step(0, 1).ops]


def test_the_command_records_what_the_python_api_records(tmp_path):
    _script(tmp_path)
    _script(tmp_path, "api.py", api=str(tmp_path / "api"))
    cmd = _dump(tmp_path, "-o", "cmd", "--", "train.py")
    assert cmd.returncode == 0, cmd.stderr
    api = subprocess.run(
        [sys.executable, "api.py"], cwd=tmp_path, env=_env(), capture_output=True, check=True
    )
    assert api.returncode == 0
    a, b = read_dump(tmp_path / "cmd"), read_dump(tmp_path / "api")
    assert a.steps(0) == b.steps(0) == [0, 1, 2, 3]
    for s in a.steps(0):
        assert _rows(a.step(0, s)) == _rows(b.step(0, s)), s
    for s in (1, 2, 3):  # step 0's set-up reads uninitialised memory (aten.empty): skip it
        stats_a = [t.stats for o in a.step(0, s).ops for t in o.tensors]
        stats_b = [t.stats for o in b.step(0, s).ops for t in o.tensors]
        assert stats_a == stats_b, s
        assert all(st is not None for st in stats_a)


def test_a_script_that_raises_leaves_an_incomplete_dump_and_its_exit_code(tmp_path):
    _script(tmp_path)
    out = _dump(tmp_path, "-o", "d", "--", "train.py", "raise")
    assert out.returncode == 1
    assert "ValueError: boom after 4 steps" in out.stderr  # the script's own traceback
    d = read_dump(tmp_path / "d")
    assert not d.complete
    manifest = d.manifest(0)
    assert manifest is not None
    assert manifest.incomplete_reason == "ValueError: boom after 4 steps"
    assert "incomplete (ValueError: boom after 4 steps)" in out.stderr


def test_module_form_exit_status_and_the_users_sitecustomize(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    _script(pkg, "train.py")
    own = tmp_path / "own"  # a sitecustomize the hook's one shadows must still run
    own.mkdir()
    (own / "sitecustomize.py").write_text("open('own-site-ran', 'w').close()\n")
    env = _env(PYTHONPATH=os.pathsep.join([str(own), os.environ.get("PYTHONPATH", "")]))
    out = _dump(tmp_path, "-o", "d", "--steps", "1,3", "-m", "pkg.train", "exit3", env=env)
    assert out.returncode == 3, out.stderr
    assert out.stdout.splitlines() == ["main __main__ ['exit3']"]
    d = read_dump(tmp_path / "d")
    assert d.steps(0) == [1, 3]
    assert (tmp_path / "own-site-ran").exists()
    (tmp_path / "own-site-ran").unlink()
    # closed, complete, as soon as step 3 (the last listed) ended: the exit that follows
    # does not touch it
    assert d.complete
    out = _dump(
        tmp_path, "-o", "e", "--", "-m", "pkg.train", "exit3", env=env
    )  # every step: the non-zero exit happens while recording
    assert out.returncode == 3
    manifest = read_dump(tmp_path / "e").manifest(0)
    assert manifest is not None
    assert not manifest.complete
    assert manifest.incomplete_reason == "the script exited with status 3"
    assert (tmp_path / "own-site-ran").exists()


@pytest.mark.parametrize(
    ("signum", "reason"),
    [(signal.SIGTERM, "killed by signal SIGTERM"), (signal.SIGINT, "KeyboardInterrupt")],
)
def test_signals_are_forwarded_and_mark_the_dump_incomplete(tmp_path, signum, reason):
    _script(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tensorsight", "dump", "-o", "d", "--", "train.py", "wait"],
        cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        for _ in range(1200):  # until the script has stepped 4 times and waits
            if (tmp_path / "ready").exists() or proc.poll() is not None:
                break
            time.sleep(0.1)
        assert (tmp_path / "ready").exists()
        proc.send_signal(signum)  # to tensorsight dump, which passes it on
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signum, err
    manifest = read_dump(tmp_path / "d").manifest(0)
    assert manifest is not None
    assert not manifest.complete
    assert manifest.incomplete_reason == reason
    assert manifest.steps[-1].step == 3


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["dump", "-o", "OUT", "python", "train.py"], "missing '--' before it"),
        (["dump", "-o", "OUT", "--", "nope.py"], "Script 'nope.py': not found"),
        (["dump", "-o", "OUT"], "Command: missing"),
        (["dump", "-o", "OUT", "--", "ls", "-l"], "Command 'ls': not a Python script"),
        (["dump", "-o", "OUT", "--", "python", "-c", "pass"], "python -c cannot be recorded"),
        (["dump", "-o", "OUT", "--steps", "2-x", "--", "train.py"], "Option --steps '2-x'"),
        (["dump", "-o", "OUT", "--shard-bytes", "lots", "--", "train.py"], "not a size"),
        (["dump", "-o", "OUT", "-m", "no_such_mod_xyz"], "Module 'no_such_mod_xyz'"),
        (["dump", "-o", "FULL", "--", "train.py"], "not empty (holds 'notes.txt')"),
    ],
)
def test_user_mistakes_are_one_line_errors_with_exit_2(tmp_path, monkeypatch, capsys, argv, needle):
    monkeypatch.chdir(tmp_path)
    _script(tmp_path)
    (tmp_path / "FULL").mkdir()
    (tmp_path / "FULL" / "notes.txt").write_text("mine")
    argv = [str(tmp_path / a) if a in ("OUT", "FULL") else a for a in argv]
    assert cli.main(argv) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("error: ")
    assert needle in err
    assert not (tmp_path / "OUT").exists()  # nothing ran


def test_overwrite_replaces_the_rank_folders_and_keeps_other_files(tmp_path):
    _script(tmp_path)
    out = tmp_path / "d"
    (out / "rank5").mkdir(parents=True)  # a rank of an earlier, larger run
    (out / "notes.txt").write_text("mine")
    res = _dump(tmp_path, "-o", "d", "--overwrite", "--steps", "0", "--", "train.py")
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt", "rank0"]
    assert read_dump(out).steps(0) == [0]


def test_option_parsers():
    assert parse_int_list("--steps", "0,2-4,3") == (0, 2, 3, 4)
    assert parse_int_list("--ranks", "1") == (1,)
    assert parse_size("--shard-bytes", "4096") == 4096
    assert parse_size("--shard-bytes", "512M") == 512 * 1024**2
    assert parse_size("--max-queue-bytes", "1GiB") == 1024**3
    with pytest.raises(UsageError, match="runs backwards"):
        parse_int_list("--steps", "4-2")
    with pytest.raises(UsageError, match="not a size"):
        parse_size("--shard-bytes", "0")


def test_command_forms_resolve_to_the_script_its_processes_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    script = _script(tmp_path)
    real = os.path.realpath(script)
    c = resolve_command(["train.py", "--x"])
    assert c.argv == (sys.executable, "train.py", "--x")
    assert (c.target_kind, c.target, c.launcher) == ("script", real, None)
    c = resolve_command(["python", "-u", "-X", "dev", "train.py"])
    assert (c.argv[0], c.target) == ("python", real)
    torchrun = shutil.which("torchrun")
    if torchrun is not None:
        c = resolve_command([torchrun, "--nproc_per_node=2", "--master_port", "1", "train.py"])
        assert (c.launcher, c.target_kind, c.target) == ("torchrun", "script", real)
    c = resolve_command(["python", "-m", "torch.distributed.run", "--standalone", "train.py"])
    assert (c.launcher, c.target) == ("torchrun", real)


def test_dump_help_has_examples():
    result = subprocess.run(
        [sys.executable, "-m", "tensorsight", "dump", "--help"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "examples:" in result.stdout
    assert "-- python train.py" in result.stdout
    assert "torchrun --nproc_per_node=2 train.py" in result.stdout


DDP = """\
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
torch.manual_seed(0)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.full((3, 4), float(dist.get_rank() + 1))
for _ in range(2):
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()
dist.destroy_process_group()
"""


@pytest.mark.slow
def test_torchrun_workers_each_record_their_rank(tmp_path):
    dist = pytest.importorskip("torch.distributed")
    if not dist.is_available():
        pytest.skip("torch.distributed is not built")
    (tmp_path / "ddp.py").write_text(DDP)
    launcher = ["-m", "torch.distributed.run"]
    torchrun = Path(sys.executable).with_name("torchrun")
    words = [str(torchrun)] if torchrun.exists() else [sys.executable, *launcher]
    out = _dump(
        tmp_path, "-o", "d", "--mode", "md5", "--",
        *words, "--standalone", "--nproc_per_node=2", "ddp.py",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    d = read_dump(tmp_path / "d")
    assert d.ranks == [0, 1]
    assert d.complete
    for rank in (0, 1):
        m = d.manifest(rank)
        assert m is not None
        assert (m.rank, m.world_size) == (rank, 2)
        assert d.steps(rank) == [0, 1]

    # each rank's own gradient differs (inputs differ per rank); after DDP's all-reduce the
    # SGD updates agree bit for bit
    def fingerprints(rank: int, op: str, prefix: str) -> list[str | None]:
        ops = d.step(rank, 1).ops
        return [
            t.fingerprint
            for o in ops
            if o.op == op
            for t in o.tensors
            if t.tensor.startswith(prefix)
        ]

    assert fingerprints(0, "tensorsight.param_grad", "grad.") != fingerprints(
        1, "tensorsight.param_grad", "grad."
    )
    assert fingerprints(0, "c10d.allreduce_.default", "output")
    updates = [fingerprints(r, "aten.add_.Tensor", "output") for r in (0, 1)]
    assert len(updates[0]) == 2
    assert updates[0] == updates[1]


def test_the_exit_builtin_with_a_status_leaves_an_incomplete_dump(tmp_path):
    _script(tmp_path)
    out = _dump(tmp_path, "-o", "d", "--", "python", "train.py", "quit4")
    assert out.returncode == 4, out.stderr
    manifest = read_dump(tmp_path / "d").manifest()
    assert manifest is not None
    assert not manifest.complete
    assert manifest.incomplete_reason == "the script exited with status 4"
