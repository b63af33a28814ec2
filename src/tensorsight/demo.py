"""``tensorsight demo``: the whole story on a small model, on the CPU, in about a minute.

1. *Train* a small transformer-style classifier twice, in fp32 and under bf16 autocast,
   logging with :class:`tensorsight.SummaryWriter` (scalars, histograms, images, text,
   graph with dtypes, a whole tensor, the data pipeline, hparams).
2. *Dump* one training step of three runs: fp32 (bench), bf16 autocast (healthy target)
   and fp32 with a planted bug (LayerNorm eps changed in block 1).
3. *Compare* fp32 vs bf16 (expected: agree) and fp32 vs the planted bug (expected: the
   first divergence is in ``blocks.1``), writing JSON/HTML/CSV reports.
4. *Serve* the board on the logdir (the command line does this part).

The engine returns a :class:`DemoResult`; only ``cli`` prints.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tensorsight._lazy import lazy_import
from tensorsight.errors import UsageError

__all__ = ["DemoResult", "run_demo"]

Say = Callable[[str], None]


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
    """

    logdir: Path
    runs: tuple[str, ...]
    dumps: dict[str, Path]
    healthy: str
    healthy_agrees: bool
    bug: str
    bug_first_divergence: str | None


def _model_class(torch: Any) -> Any:
    nn = torch.nn

    class Block(nn.Module):  # type: ignore[misc,name-defined]
        def __init__(self, width: int, eps: float) -> None:
            super().__init__()
            self.ln1 = nn.LayerNorm(width, eps=eps)
            self.attn = nn.MultiheadAttention(width, 4, batch_first=True)
            self.ln2 = nn.LayerNorm(width, eps=eps)
            self.mlp = nn.Sequential(
                nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width)
            )

        def forward(self, x: Any) -> Any:
            h = self.ln1(x)
            x = x + self.attn(h, h, h, need_weights=False)[0]
            return x + self.mlp(self.ln2(x))

    class DemoNet(nn.Module):  # type: ignore[misc,name-defined]
        """8x8 'images' -> 8 tokens of 8 pixels -> 2 blocks -> 4 classes."""

        def __init__(self, width: int = 32, bug_eps: float | None = None) -> None:
            super().__init__()
            self.embed = nn.Linear(8, width)
            self.blocks = nn.ModuleList(
                [Block(width, 1e-5), Block(width, 1e-5 if bug_eps is None else bug_eps)]
            )
            self.head = nn.Linear(width, 4)

        def forward(self, images: Any) -> Any:
            x = self.embed(images.reshape(images.shape[0], 8, 8))
            for block in self.blocks:
                x = block(x)
            return self.head(x.mean(dim=1))

    return DemoNet


def _dataset(torch: Any, n: int = 512) -> Any:
    """Four classes of noisy 8x8 patterns (stripes, columns, diagonal, blob)."""
    g = torch.Generator().manual_seed(0)
    yy, xx = torch.meshgrid(torch.arange(8.0), torch.arange(8.0), indexing="ij")
    patterns = torch.stack(
        [
            (yy % 2 == 0).float(),
            (xx % 2 == 0).float(),
            (yy == xx).float(),
            torch.exp(-((yy - 3.5) ** 2 + (xx - 3.5) ** 2) / 6),
        ]
    )
    labels = torch.randint(0, 4, (n,), generator=g)
    images = patterns[labels] + 0.4 * torch.randn(n, 8, 8, generator=g)
    return torch.utils.data.TensorDataset(images.unsqueeze(1), labels)


def _train(torch: Any, run_dir: Path, *, bf16: bool, steps: int, say: Say) -> None:
    from tensorsight.summary import SummaryWriter

    torch.manual_seed(0)
    model = _model_class(torch)()
    data = _dataset(torch)
    loader = torch.utils.data.DataLoader(data, batch_size=32, shuffle=True)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16)
    with SummaryWriter(str(run_dir)) as writer:
        example = next(iter(loader))[0]
        with autocast:
            writer.add_graph(model, example)
        writer.add_data_graph("pipeline", loader)
        writer.add_text(
            "config",
            f"**precision**: {'bf16 autocast' if bf16 else 'fp32'}  \n"
            f"**steps**: {steps}, **batch**: 32, **optimizer**: AdamW + cosine",
        )
        step = 0
        while step < steps:
            for images, labels in loader:
                with autocast:
                    logits = model(images)
                    loss = torch.nn.functional.cross_entropy(logits.float(), labels)
                opt.zero_grad()
                loss.backward()
                norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
                opt.step()
                sched.step()
                acc = (logits.argmax(1) == labels).float().mean()
                writer.add_scalar("loss/train", loss.item(), step)
                writer.add_scalar("accuracy/train", acc.item(), step)
                writer.add_scalar("grad_norm", norm.item(), step)
                writer.add_scalar("lr", sched.get_last_lr()[0], step)
                if step % 25 == 0:
                    for name, p in model.named_parameters():
                        if p.dim() > 1:
                            writer.add_histogram(f"weights/{name}", p.detach(), step)
                    writer.add_images("inputs", images[:8].clamp(-1, 2).add(1).div(3), step)
                step += 1
                if step >= steps:
                    break
        writer.add_tensor("embed.weight", model.embed.weight.detach(), steps)
        writer.add_hparams(
            {"precision": "bf16" if bf16 else "fp32", "lr": 3e-3, "width": 32},
            {"hparam/final_loss": float(loss.item()), "hparam/final_accuracy": float(acc.item())},
        )
    say(f"trained {run_dir.name}: final loss {loss.item():.3f}, accuracy {acc.item():.2f}")


def _dump_step(torch: Any, path: Path, *, bf16: bool = False, bug_eps: float | None = None) -> None:
    from tensorsight.capture import dump

    torch.manual_seed(0)
    model = _model_class(torch)(bug_eps=bug_eps)
    images, labels = next(iter(torch.utils.data.DataLoader(_dataset(torch), batch_size=16)))
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
        steps: Training steps per run (``None``: 200).
        force: Replace an existing non-empty ``logdir``.
        say: Called with one line per stage (``None``: silent).

    Raises:
        UsageError: ``logdir`` is not empty and ``force`` is false, or ``steps`` < 1.
    """
    torch = lazy_import("torch", extra="torch", needed_by="tensorsight demo")
    from tensorsight.compare import compare

    out = Path(logdir)
    n_steps = 200 if steps is None else steps
    if n_steps < 1:
        msg = f"Demo steps {n_steps!r}: must be at least 1. Expected e.g. 200."
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

    torch.set_num_threads(max(1, min(4, torch.get_num_threads())))
    for name, bf16 in (("fp32", False), ("bf16", True)):
        _train(torch, out / "train" / name, bf16=bf16, steps=n_steps, say=speak)

    dumps = {
        "fp32": out / "dumps" / "fp32",
        "bf16": out / "dumps" / "bf16",
        "bug": out / "dumps" / "bug",
    }
    _dump_step(torch, dumps["fp32"])
    _dump_step(torch, dumps["bf16"], bf16=True)
    _dump_step(torch, dumps["bug"], bug_eps=1e-1)
    speak("dumped one training step of fp32, bf16 autocast and a planted LayerNorm-eps bug")

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
    )
