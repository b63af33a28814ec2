"""The realistic sample project: CUDA-only training that fails on a CPU-only machine before
migration and trains on the CPU after it (real torch, real training steps)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tensorsight.migrate import migrate

SAMPLE = Path(__file__).parent / "sample_project"
TRAIN = f"{sys.executable} train.py --steps 2"

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        torch.cuda.is_available(), reason="the 'before' run needs a CPU-only machine"
    ),
]


def test_fails_on_cpu_before_migration(tmp_path):
    copy = tmp_path / "before"
    shutil.copytree(SAMPLE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    proc = subprocess.run(
        TRAIN.split(), cwd=copy, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode != 0
    assert "step 0" not in proc.stdout


def test_trains_on_cpu_after_migration(tmp_path):
    out = tmp_path / "after"
    report = migrate(SAMPLE, output=out, unsafe_fixes=True, verify=TRAIN)
    assert report.verify is not None
    assert report.verify.ok, report.verify.output_tail
    losses = [
        float(line.split()[-1])
        for line in report.verify.output_tail.splitlines()
        if line.startswith("step")
    ]
    assert len(losses) == 2
    assert all(loss == loss and loss < 10 for loss in losses)  # finite, sensible
    assert report.check_problems == ()
    assert not report.failed
    counts = report.counts()
    assert counts["files_changed"] == 4
    assert counts["manual"] == 0
    assert counts["unsupported"] == 0
    # every CUDA API of the project is gone (the alias `cuda = torch.cuda` stays, unused)
    for path in out.glob("*.py"):
        code = path.read_text().replace("cuda = torch.cuda", "")
        assert "cuda." not in code, path
        assert "cuda(" not in code, path


def test_safe_mode_reports_the_unsafe_sites_instead(tmp_path):
    report = migrate(SAMPLE)
    manual = [s for s in report.sites if s.status == "manual"]
    assert {(s.file, s.api) for s in manual} == {
        ("train.py", ".cuda"),
    }
    assert all(s.safety == "unsafe" and "--unsafe-fixes" in s.message for s in manual)
