"""The demo's model and training loop, logged with :class:`tensorsight.SummaryWriter`.

A small CNN (two conv blocks, an MLP head) learns the shapes of :mod:`._shapes` with AdamW
and a cosine learning rate. One run is fp32, the other runs the same steps, seeds and data
order under bf16 autocast; everything a user would log goes to the run's folder.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tensorsight.demo._shapes import CLASSES, make_shapes, prediction_grid

__all__ = ["BATCH", "LR", "RunResult", "model_class", "train_run"]

BATCH = 64
LR = 1e-2
TRAIN_SIZE = 4096
EVAL_SIZE = 512
NOISE = 0.35
# eval images in the predictions picture: 24 of them, a slice whose error rate at the end of
# training is about the whole set's (3 wrong in fp32); the first 24 hold more hard circles
PICTURE = slice(48, 72)
WATCHED = ("blocks.0.0.weight", "blocks.1.0.weight", "head.1.weight", "head.3.weight")


@dataclass(frozen=True)
class RunResult:
    """One training run: final eval metrics and the train loss of every step."""

    eval_loss: float
    eval_accuracy: float
    train_losses: tuple[float, ...]


def model_class(torch: Any) -> Any:
    """The demo CNN: ``blocks`` (conv, BatchNorm, GELU, max-pool) x2, then ``head``."""
    nn = torch.nn

    def conv_block(c_in: int, c_out: int, eps: float) -> Any:
        return nn.Sequential(
            nn.Conv2d(c_in, c_out, 3, padding=1),
            nn.BatchNorm2d(c_out, eps=eps),
            nn.GELU(),
            nn.MaxPool2d(2),
        )

    class ShapesNet(nn.Module):  # type: ignore[misc,name-defined]
        """16x16 shapes -> 16 x 8x8 -> 32 x 4x4 -> 64 -> 4 classes."""

        def __init__(self, bug_eps: float | None = None) -> None:
            super().__init__()
            self.blocks = nn.ModuleList(
                [conv_block(1, 16, 1e-5), conv_block(16, 32, 1e-5 if bug_eps is None else bug_eps)]
            )
            self.head = nn.Sequential(
                nn.Flatten(), nn.Linear(32 * 4 * 4, 64), nn.GELU(), nn.Linear(64, len(CLASSES))
            )

        def forward(self, images: Any) -> Any:
            x = images
            for block in self.blocks:
                x = block(x)
            return self.head(x)

    return ShapesNet


def _loss_fn(torch: Any) -> Callable[[Any, Any], Any]:
    def loss(logits: Any, labels: Any) -> Any:
        return torch.nn.functional.cross_entropy(logits.float(), labels)

    return loss


def _batches(loader: Any, steps: int) -> Iterator[tuple[int, Any, Any]]:
    """``(step, images, labels)`` for ``steps`` steps, cycling through the epochs."""
    step = 0
    while True:
        for images, labels in loader:
            if step >= steps:
                return
            yield step, images, labels
            step += 1


@dataclass
class _Eval:
    """The held-out set, evaluated in eval mode under the run's precision."""

    torch: Any
    model: Any
    autocast: Any
    images: Any
    labels: Any
    loss: float = float("nan")
    accuracy: float = float("nan")

    def predict(self) -> Any:
        self.model.eval()
        with self.torch.no_grad(), self.autocast:
            logits = self.model(self.images).float()
        self.model.train()
        self.loss = float(_loss_fn(self.torch)(logits, self.labels))
        predicted = logits.argmax(1)
        self.accuracy = float((predicted == self.labels).float().mean())
        return predicted

    def picture(self, writer: Any, step: int) -> None:
        predicted = self.predict()[PICTURE].numpy()
        grid = prediction_grid(
            self.images[PICTURE].numpy(), self.labels[PICTURE].numpy(), predicted
        )
        writer.add_image("predictions", grid, step, dataformats="HWC")


def train_run(
    torch: Any,
    run_dir: Path,
    *,
    bf16: bool,
    steps: int,
    reference: tuple[float, ...] | None = None,
    landscape_grid: int = 21,
    say: Callable[[str], None],
) -> RunResult:
    """Train one run for ``steps`` steps and log it to ``run_dir``.

    ``reference`` is the fp32 run's train losses: the bf16 run logs its gap to them
    (``loss/train_bf16_minus_fp32``), the difference a user looks for first.
    """
    from tensorsight.summary import SummaryWriter

    torch.manual_seed(0)
    model = model_class(torch)()
    images, labels = make_shapes(torch, TRAIN_SIZE, seed=0, noise=NOISE)
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(images, labels),
        batch_size=BATCH,
        shuffle=True,
        generator=torch.Generator().manual_seed(0),
    )
    opt = torch.optim.AdamW(model.parameters(), lr=LR)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16)
    held_out = _Eval(torch, model, autocast, *make_shapes(torch, EVAL_SIZE, seed=1, noise=NOISE))
    every = max(1, steps // 12)  # eval, histograms and checkpoints: ~12 times a run
    pictures = {1, steps // 10, steps // 4, steps // 2, steps}  # the predictions picture
    params = dict(model.named_parameters())
    losses: list[float] = []
    checkpoints = []
    with SummaryWriter(str(run_dir)) as writer:
        _log_setup(writer, model, loader, held_out, bf16=bf16, steps=steps)
        held_out.predict()  # the untrained model: chance level, where the eval curves start
        writer.add_scalar("loss/eval", held_out.loss, 0)
        writer.add_scalar("accuracy/eval", held_out.accuracy, 0)
        for step, batch, targets in _batches(loader, steps):
            with autocast:
                logits = model(batch)
                loss = torch.nn.functional.cross_entropy(logits.float(), targets)
            opt.zero_grad()
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            if step % every == 0 or step == steps - 1:
                for name in WATCHED:
                    writer.add_histogram(f"weights/{name}", params[name].detach(), step)
                    writer.add_histogram(f"grads/{name}", params[name].grad, step)
            writer.add_scalar("lr", sched.get_last_lr()[0], step)
            opt.step()
            sched.step()
            losses.append(loss.item())
            writer.add_scalar("loss/train", losses[-1], step)
            writer.add_scalar(
                "accuracy/train", float((logits.argmax(1) == targets).float().mean()), step
            )
            writer.add_scalar("grad_norm", float(norm), step)
            if reference is not None and step < len(reference):
                gap = losses[-1] - reference[step]
                writer.add_scalar("loss/train_bf16_minus_fp32", gap, step)
            done = step + 1
            if done % every == 0 or done == steps:
                held_out.predict()
                writer.add_scalar("loss/eval", held_out.loss, done)
                writer.add_scalar("accuracy/eval", held_out.accuracy, done)
                checkpoints.append({k: v.detach().clone() for k, v in model.state_dict().items()})
            if done in pictures:
                held_out.picture(writer, done)
        _log_end(writer, model, held_out, checkpoints, bf16=bf16, steps=steps, grid=landscape_grid)
    say(f"trained {run_dir.name}: eval loss {held_out.loss:.3f}, accuracy {held_out.accuracy:.2f}")
    return RunResult(held_out.loss, held_out.accuracy, tuple(losses))


def _log_setup(
    writer: Any, model: Any, loader: Any, held_out: _Eval, *, bf16: bool, steps: int
) -> None:
    """What a run logs before training: the graph (with dtypes), the pipeline, the config."""
    with held_out.autocast:
        writer.add_graph(model, held_out.images[:8])
    writer.add_data_graph("pipeline", loader)
    writer.add_text(
        "config",
        f"**precision**: {'bf16 autocast' if bf16 else 'fp32'}  \n"
        f"**task**: classify noisy 16x16 shapes ({', '.join(CLASSES)})  \n"
        f"**steps**: {steps}, **batch**: {BATCH}, **optimizer**: AdamW lr {LR:g}, cosine  \n"
        "**predictions picture**: green frame = right, red = wrong; under each image the "
        "true shape (left) and the predicted one (right)",
    )


def _log_end(
    writer: Any,
    model: Any,
    held_out: _Eval,
    checkpoints: list[Any],
    *,
    bf16: bool,
    steps: int,
    grid: int,
) -> None:
    """What a run logs after training: a whole tensor, the loss landscape, the hparams."""
    import tensorsight.landscape as tl

    torch = held_out.torch
    first_conv = dict(model.named_parameters())["blocks.0.0.weight"]
    writer.add_tensor("blocks.0.0.weight", first_conv.detach(), steps)
    if len(checkpoints) >= 2:
        batch = (held_out.images[:256], held_out.labels[:256])
        with held_out.autocast:
            landscape = tl.compute(
                model,
                _loss_fn(torch),
                [batch],
                directions="pca",
                grid=grid,
                checkpoints=checkpoints,
            )
        landscape.write(writer, "landscape/pca", step=steps)
    writer.add_hparams(
        {"precision": "bf16" if bf16 else "fp32", "lr": LR, "batch": BATCH, "steps": steps},
        {"hparam/eval_loss": held_out.loss, "hparam/eval_accuracy": held_out.accuracy},
        global_step=steps,  # the metrics' points sit at the last step, not at step 0
    )
