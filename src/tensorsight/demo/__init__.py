"""``tensorsight demo``: the whole story on a small model, on the CPU, in well under a minute.

1. *Train* a small CNN to classify noisy 16x16 shapes (circle, square, triangle, cross)
   twice, in fp32 and under bf16 autocast, with the same seeds and data order, logging with
   :class:`tensorsight.SummaryWriter`: train/eval loss and accuracy, the learning rate, the
   bf16 run's loss gap to fp32, weight and gradient histograms, a picture of predictions,
   text, the graph with dtypes, a whole tensor, the data pipeline, a loss landscape (PCA of
   the training path) and hparams. Both learn (~90 % eval accuracy); their curves differ.
2. *Dump* one training step of three runs: fp32 (bench), bf16 autocast (healthy target)
   and fp32 with a planted bug (BatchNorm eps 1e-5 -> 0.1 in ``blocks.1``).
3. *Compare* fp32 vs bf16 (expected: agree within the bf16 error budgets) and fp32 vs the
   planted bug (expected: the first divergence is the batch norm in ``blocks.1``), writing
   JSON/HTML/CSV reports.
4. *Serve* the board on the logdir (the command line does this part).

Everything is seeded and runs on one CPU thread, so two runs of the demo write the same
numbers (on the same machine and torch build).

The engine returns a :class:`DemoResult`; only ``cli`` prints.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tensorsight._lazy import lazy_import
from tensorsight.demo._shapes import make_shapes
from tensorsight.demo._train import RunResult, model_class, train_run
from tensorsight.errors import UsageError

__all__ = ["DemoResult", "run_demo"]

Say = Callable[[str], None]

BUG_EPS = 0.1
PLANTED_BUG = f"BatchNorm eps 1e-05 -> {BUG_EPS:g} in blocks.1"
DEFAULT_STEPS = 300


@dataclass(frozen=True)
class DemoResult:
    """What the demo produced.

    Attributes:
        logdir: The folder holding everything (open it with ``tensorsight board``).
        runs: Training runs written (relative to ``logdir``).
        dumps: Dump folders, by name (``fp32``, ``bf16``, ``bug``).
        healthy: Summary of fp32 vs bf16 (one line per fact).
        healthy_agrees: True when fp32 vs bf16 found no divergence.
        bug: Summary of fp32 vs the planted bug.
        bug_first_divergence: ``"<op> in <module_path>"`` of the planted-bug comparison.
        planted_bug: What the planted bug is, in words.
        final: Each training run's final eval loss and accuracy (and its train losses), by
            precision (``fp32``, ``bf16``).
    """

    logdir: Path
    runs: tuple[str, ...]
    dumps: dict[str, Path]
    healthy: str
    healthy_agrees: bool
    bug: str
    bug_first_divergence: str | None
    planted_bug: str = PLANTED_BUG
    final: dict[str, RunResult] = field(default_factory=dict)


def _dump_step(torch: Any, path: Path, *, bf16: bool = False, bug_eps: float | None = None) -> None:
    from tensorsight.capture import dump

    torch.manual_seed(0)
    model = model_class(torch)(bug_eps=bug_eps)
    images, labels = make_shapes(torch, 16, seed=2)
    with (
        dump(path, mode="tensor", steps=[0], overwrite=True),
        torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16),
    ):
        loss = torch.nn.functional.cross_entropy(model(images).float(), labels)
        loss.backward()


def _write_reports(result: Any, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    result.to_json(folder / "comparison.json")
    result.to_csv(folder / "comparison.csv")
    result.to_html(folder / "report.html")


def run_demo(
    logdir: str | Path, *, steps: int | None = None, force: bool = False, say: Say | None = None
) -> DemoResult:
    """Train, dump, compare; return where everything is.

    Args:
        logdir: Output folder; refused when it is not empty unless ``force``.
        steps: Training steps per run (``None``: 300; tests use ~12).
        force: Replace an existing non-empty ``logdir``.
        say: Called with one line per stage (``None``: silent).

    Raises:
        UsageError: ``logdir`` is not empty and ``force`` is false, or ``steps`` < 1.
    """
    torch = lazy_import("torch", extra="torch", needed_by="tensorsight demo")

    out = Path(logdir)
    n_steps = DEFAULT_STEPS if steps is None else steps
    if n_steps < 1:
        msg = f"Demo steps {n_steps!r}: must be at least 1. Expected e.g. {DEFAULT_STEPS}."
        raise UsageError(msg)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        if not force:
            msg = (
                f"Demo logdir {str(out)!r}: not empty. Expected a new or empty folder. "
                "Pass --force to replace it."
            )
            raise UsageError(msg)
        if out.is_dir() and not out.is_symlink():
            shutil.rmtree(out)
        else:
            out.unlink()
    out.mkdir(parents=True, exist_ok=True)
    speak: Say = say or (lambda _line: None)

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny ops: one thread is as fast, and the numbers reproduce
    try:
        return _run(torch, out, n_steps, speak)
    finally:
        torch.set_num_threads(threads)


def _run(torch: Any, out: Path, n_steps: int, speak: Say) -> DemoResult:
    from tensorsight.compare import compare

    fp32 = train_run(torch, out / "train" / "fp32", bf16=False, steps=n_steps, say=speak)
    bf16 = train_run(
        torch,
        out / "train" / "bf16",
        bf16=True,
        steps=n_steps,
        reference=fp32.train_losses,
        say=speak,
    )

    dumps = {
        "fp32": out / "dumps" / "fp32",
        "bf16": out / "dumps" / "bf16",
        "bug": out / "dumps" / "bug",
    }
    _dump_step(torch, dumps["fp32"])
    _dump_step(torch, dumps["bf16"], bf16=True)
    _dump_step(torch, dumps["bug"], bug_eps=BUG_EPS)
    speak(f"dumped one training step of fp32, bf16 autocast and a planted bug ({PLANTED_BUG})")

    healthy = compare(dumps["fp32"], dumps["bf16"])
    _write_reports(healthy, out / "compare" / "fp32-vs-bf16")
    bug = compare(dumps["fp32"], dumps["bug"])
    _write_reports(bug, out / "compare" / "fp32-vs-bug")
    first = bug.first_divergence
    where = None if first is None else f"{first.op} in {first.module_path}"
    speak(
        f"compared: fp32 vs bf16 {'agree' if healthy.first_divergence is None else 'diverge'}; "
        f"planted bug found at {where}"
    )
    return DemoResult(
        logdir=out,
        runs=("train/fp32", "train/bf16"),
        dumps=dumps,
        healthy=healthy.summary(),
        healthy_agrees=healthy.first_divergence is None,
        bug=bug.summary(),
        bug_first_divergence=where,
        final={"fp32": fp32, "bf16": bf16},
    )
