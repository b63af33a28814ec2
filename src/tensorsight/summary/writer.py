"""``SummaryWriter``: a drop-in for ``torch.utils.tensorboard.SummaryWriter``.

Same method names, argument names, order and defaults as torch's writer, writing the same
TensorBoard event files (docs/formats/summaries.md is the spec), plus ``add_tensor``
(bit-exact, bf16/fp16 kept), ``add_data_graph`` and ``add_landscape``. Inputs may be torch
tensors, numpy arrays or Python numbers; torch is imported only by ``add_graph``.

Differences from torch's writer: writing after ``close()`` raises ``UsageError`` (torch
silently reopens a new file); ``add_graph`` records ATen ops with dtypes instead of using the
deprecated ``torch.jit.trace``; bool hyperparameters are logged as bools (torch logs 1.0/0.0);
images are PNG-encoded without Pillow; ``add_video`` writes its GIF with Pillow where torch's
writer needs moviepy (whose 2.x releases it cannot use); ``add_mesh`` needs no tensorboard.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from types import TracebackType
from typing import Any

from tensorsight.errors import UsageError
from tensorsight.summary._event_file import EventFileWriter
from tensorsight.summary._proto import tb
from tensorsight.summary.kinds import (
    audio,
    custom_scalars,
    data_graph,
    embedding,
    histogram,
    hparams,
    image,
    landscape,
    mesh,
    pr_curve,
    scalar,
    text,
    video,
)
from tensorsight.summary.kinds import figure as figure_kind
from tensorsight.summary.kinds import tensor as tensor_kind

__all__ = ["SummaryWriter"]

_Event = tb.Event
_Summary = tb.Summary


class SummaryWriter:
    """Writes TensorBoard event files from a background thread.

    Args:
        log_dir: Folder for the event files. Default: ``runs/<Mon DD_HH-MM-SS>_<host><comment>``.
        comment: Appended to the default ``log_dir``; ignored when ``log_dir`` is given.
        purge_step: After a crash at step T+X and a restart at step T, pass T: TensorBoard
            hides older events with step >= T.
        max_queue: Events held in memory before an ``add_*`` call waits for the writer thread.
        flush_secs: Most seconds between hand-offs of queued records to the operating
            system (``write(2)``, no ``fsync``); capped at 0.1 s, so a process killed by
            SIGKILL loses at most the last second of summaries.
        filename_suffix: Appended to every event file name.

    Raises:
        InputFileError: ``log_dir`` cannot be created or written.

    Example:
        >>> import tempfile
        >>> from tensorsight import SummaryWriter
        >>> with SummaryWriter(tempfile.mkdtemp()) as writer:
        ...     for step in range(3):
        ...         writer.add_scalar("loss/train", 1.0 / (step + 1), step)
    """

    def __init__(
        self,
        log_dir: str | os.PathLike[str] | None = None,
        comment: str = "",
        purge_step: int | None = None,
        max_queue: int = 10,
        flush_secs: int = 120,
        filename_suffix: str = "",
    ) -> None:
        if not log_dir:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")
        self.log_dir = os.fspath(log_dir)
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self._closed = False
        self._embeddings: list[embedding.EmbeddingInfo] = []
        self._main = EventFileWriter(self.log_dir, max_queue, flush_secs, filename_suffix)
        self._writers: dict[str, EventFileWriter] = {self.log_dir: self._main}
        if purge_step is not None:
            now = time.time()
            self._main.add_event(
                _Event(wall_time=now, step=int(purge_step), file_version="brain.Event:2")
            )
            start = tb.SessionLog(status=tb.SessionLog.SessionStatus.Value("START"))
            self._main.add_event(_Event(wall_time=now, step=int(purge_step), session_log=start))

    # ---------------------------------------------------------------- plumbing
    def get_logdir(self) -> str:
        """The folder this writer writes its main event file to."""
        return self.log_dir

    def _check_open(self) -> None:
        if self._closed:
            msg = (
                f"SummaryWriter {self.log_dir!r}: it is closed. Expected add_* calls before "
                "close(). Create a new SummaryWriter to write more."
            )
            raise UsageError(msg)

    def _add(
        self,
        value: Any,
        global_step: object,
        walltime: float | None,
        writer: EventFileWriter | None = None,
    ) -> None:
        self._add_values([value], global_step, walltime, writer)

    def _add_values(
        self,
        values: list[Any],
        global_step: object,
        walltime: float | None,
        writer: EventFileWriter | None = None,
    ) -> None:
        if self._closed:
            self._check_open()
        event = _Event(
            wall_time=time.time() if walltime is None else float(walltime),
            summary=_Summary(value=values),
        )
        if global_step is not None:
            event.step = _step(global_step)
        (writer or self._main).add_event(event)

    def _sub_writer(self, log_dir: str) -> EventFileWriter:
        writer = self._writers.get(log_dir)
        if writer is None:
            writer = EventFileWriter(log_dir, self.max_queue, self.flush_secs, self.filename_suffix)
            self._writers[log_dir] = writer
        return writer

    # ---------------------------------------------------------------- TensorBoard kinds
    def add_scalar(
        self,
        tag: str,
        scalar_value: object,
        global_step: int | None = None,
        walltime: float | None = None,
        new_style: bool = False,
        double_precision: bool = False,
    ) -> None:
        """Log one number.

        Args:
            tag: Series name, e.g. ``"loss/train"`` (any Unicode).
            scalar_value: Python number, numpy scalar or one-element tensor; NaN/±Inf kept.
            global_step: Step of the point (default 0).
            walltime: Seconds since the epoch (default now).
            new_style: Store as a ``scalars``-plugin tensor instead of ``simple_value``.
            double_precision: With ``new_style``, store float64 instead of float32.

        Example:
            >>> import tempfile
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_scalar("lr", 0.1, 0)
        """
        if self._closed:
            self._check_open()
        if not new_style:  # hot path: serialize directly, no message objects
            number = scalar.to_float(scalar_value, tag=_tag(tag))
            step = 0 if global_step is None else _step(global_step)
            wall = time.time() if walltime is None else float(walltime)
            self._main.add_event(scalar.encode_event(tag, number, step, wall))
            return
        value = scalar.encode(
            _tag(tag), scalar_value, new_style=new_style, double_precision=double_precision
        )
        self._add(value, global_step, walltime)

    def add_scalars(
        self,
        main_tag: str,
        tag_scalar_dict: Mapping[str, object],
        global_step: int | None = None,
        walltime: float | None = None,
    ) -> None:
        """Log several numbers on one chart: each key goes to its own run (sub-folder).

        The run of key ``k`` is ``<log_dir>/<main_tag with / -> _>_<k>``, the tag is
        ``main_tag`` (as torch does).

        Example:
            >>> import tempfile
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_scalars("loss", {"train": 0.5, "val": 0.7}, 0)
        """
        self._check_open()
        walltime = time.time() if walltime is None else walltime
        prefix = self.log_dir + "/" + _tag(main_tag).replace("/", "_") + "_"
        for key, value in tag_scalar_dict.items():
            writer = self._sub_writer(prefix + _run_name(str(key), "Scalars key"))
            self._add(scalar.encode(main_tag, value), global_step, walltime, writer)

    def add_histogram(
        self,
        tag: str,
        values: object,
        global_step: int | None = None,
        bins: str | int | Sequence[float] = "tensorflow",
        walltime: float | None = None,
        max_bins: int | None = None,
    ) -> None:
        """Log the distribution of ``values``.

        Args:
            tag: Series name.
            values: Tensor or array of any shape.
            global_step: Step of the point.
            bins: ``"tensorflow"`` (default), a numpy strategy (``"auto"``, ``"fd"``, ...),
                a count or the edges.
            walltime: Seconds since the epoch (default now).
            max_bins: Merge neighbouring bins down to about this many.

        Example:
            >>> import numpy as np, tempfile
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_histogram("weights", np.random.randn(1000), 0)
        """
        self._add(histogram.encode(_tag(tag), values, bins, max_bins), global_step, walltime)

    def add_histogram_raw(
        self,
        tag: str,
        min: float,
        max: float,
        num: int,
        sum: float,
        sum_squares: float,
        bucket_limits: Sequence[float] | object,
        bucket_counts: Sequence[float] | object,
        global_step: int | None = None,
        walltime: float | None = None,
    ) -> None:
        """Log a histogram from precomputed statistics (one upper limit per bucket)."""
        value = histogram.encode_raw(
            _tag(tag), min, max, num, sum, sum_squares, bucket_limits, bucket_counts
        )
        self._add(value, global_step, walltime)

    def add_image(
        self,
        tag: str,
        img_tensor: object,
        global_step: int | None = None,
        walltime: float | None = None,
        dataformats: str = "CHW",
    ) -> None:
        """Log one image: uint8 in [0, 255] or float in [0, 1], laid out as ``dataformats``.

        Example:
            >>> import numpy as np, tempfile
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_image("sample", np.random.rand(3, 8, 8), 0)
        """
        self._add(image.encode(_tag(tag), img_tensor, dataformats), global_step, walltime)

    def add_images(
        self,
        tag: str,
        img_tensor: object,
        global_step: int | None = None,
        walltime: float | None = None,
        dataformats: str = "NCHW",
    ) -> None:
        """Log a batch of images as one grid (8 per row).

        Example:
            >>> import numpy as np, tempfile
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_images("batch", np.random.rand(4, 3, 8, 8), 0)
        """
        self._add(image.encode(_tag(tag), img_tensor, dataformats), global_step, walltime)

    def add_figure(
        self,
        tag: str,
        figure: object,
        global_step: int | None = None,
        close: bool = True,
        walltime: float | None = None,
    ) -> None:
        """Log a matplotlib figure (or a list of them, as one grid) as a PNG image.

        Needs matplotlib (``pip install 'tensorsight[media]'``); ``close`` closes the figure
        after drawing it, as torch's writer does.

        Example:
            >>> import tempfile, matplotlib.pyplot as plt
            >>> fig, ax = plt.subplots(figsize=(2, 1.5))
            >>> _ = ax.plot([0, 1, 4])
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_figure("curve", fig, 0)
        """
        self._add(figure_kind.encode(_tag(tag), figure, close), global_step, walltime)

    def add_video(
        self,
        tag: str,
        vid_tensor: object,
        global_step: int | None = None,
        fps: float = 4,
        walltime: float | None = None,
    ) -> None:
        """Log a ``(N, T, C, H, W)`` video batch as one animated GIF image (clips tiled).

        Values are uint8 in [0, 255] or float in [0, 1]. Needs Pillow
        (``pip install 'tensorsight[media]'``), where torch's writer needs moviepy.

        Example:
            >>> import numpy as np, tempfile
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_video("clip", np.random.rand(1, 4, 3, 8, 8), 0, fps=2)
        """
        self._add(video.encode(_tag(tag), vid_tensor, fps), global_step, walltime)

    def add_mesh(
        self,
        tag: str,
        vertices: object,
        colors: object = None,
        faces: object = None,
        config_dict: Mapping[str, Any] | None = None,
        global_step: int | None = None,
        walltime: float | None = None,
    ) -> None:
        """Log a triangle mesh or point cloud: ``(B, N, 3)`` vertices, faces and colors.

        Written as TensorBoard's mesh plugin tensors ``<tag>_VERTEX``, ``<tag>_FACE`` and
        ``<tag>_COLOR`` in one event, as torch's writer writes them.

        Example:
            >>> import numpy as np, tempfile
            >>> v = np.array([[[1, 1, 1], [-1, -1, 1], [1, -1, -1], [-1, 1, -1]]], float)
            >>> f = np.array([[[0, 2, 3], [0, 3, 1], [0, 1, 2], [1, 3, 2]]])
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_mesh("tetra", v, faces=f, global_step=0)
        """
        values = mesh.encode(_tag(tag), vertices, colors, faces, config_dict)
        self._add_values(values, global_step, walltime)

    def add_audio(
        self,
        tag: str,
        snd_tensor: object,
        global_step: int | None = None,
        sample_rate: int = 44100,
        walltime: float | None = None,
    ) -> None:
        """Log a mono clip of samples in [-1, 1] as 16-bit WAV."""
        self._add(audio.encode(_tag(tag), snd_tensor, sample_rate), global_step, walltime)

    def add_text(
        self,
        tag: str,
        text_string: str,
        global_step: int | None = None,
        walltime: float | None = None,
    ) -> None:
        """Log Markdown text (stored under the tag ``<tag>/text_summary``, as torch does).

        Example:
            >>> import tempfile
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_text("notes", "lr **halved**", 10)
        """
        self._add(text.encode(_tag(tag), text_string), global_step, walltime)

    def add_pr_curve(
        self,
        tag: str,
        labels: object,
        predictions: object,
        global_step: int | None = None,
        num_thresholds: int = 127,
        weights: object = None,
        walltime: float | None = None,
    ) -> None:
        """Log a precision-recall curve of binary ``labels`` vs ``predictions`` in [0, 1]."""
        value = pr_curve.encode(_tag(tag), labels, predictions, num_thresholds, weights)
        self._add(value, global_step, walltime)

    def add_pr_curve_raw(
        self,
        tag: str,
        true_positive_counts: object,
        false_positive_counts: object,
        true_negative_counts: object,
        false_negative_counts: object,
        precision: object,
        recall: object,
        global_step: int | None = None,
        num_thresholds: int = 127,
        weights: object = None,
        walltime: float | None = None,
    ) -> None:
        """Log a precision-recall curve from precomputed counts (``weights`` is ignored)."""
        value = pr_curve.encode_raw(
            _tag(tag),
            true_positive_counts,
            false_positive_counts,
            true_negative_counts,
            false_negative_counts,
            precision,
            recall,
            num_thresholds,
        )
        self._add(value, global_step, walltime)

    def add_hparams(
        self,
        hparam_dict: Mapping[str, object],
        metric_dict: Mapping[str, object],
        hparam_domain_discrete: Mapping[str, Sequence[object]] | None = None,
        run_name: str | None = None,
        global_step: int | None = None,
    ) -> None:
        """Log one hyperparameter set and its metrics to the run ``<log_dir>/<run_name>``.

        Args:
            hparam_dict: Name -> bool, number, str (None values are skipped).
            metric_dict: Name -> value; each is also logged as a scalar in that run.
            hparam_domain_discrete: Name -> all values the hparam can take.
            run_name: Sub-folder name (default: the current time).
            global_step: Step of the records.

        Example:
            >>> import tempfile
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_hparams({"lr": 0.1, "opt": "adam"}, {"hparam/accuracy": 0.9})
        """
        self._check_open()
        values = hparams.encode(hparam_dict, metric_dict, hparam_domain_discrete)
        run = os.path.join(self.log_dir, _run_name(run_name or str(time.time()), "Run name"))
        writer = self._sub_writer(run)
        for value in values:
            self._add(value, global_step, None, writer)
        for name, metric in metric_dict.items():
            self._add(scalar.encode(_tag(name), metric), global_step, None, writer)

    def add_custom_scalars(self, layout: Mapping[str, Mapping[str, object]]) -> None:
        """Combine scalar tags into charts: ``{category: {title: [type, [tags...]]}}``.

        ``type`` is ``"Multiline"`` or ``"Margin"`` (three tags: value, lower, upper).

        Example:
            >>> import tempfile
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_custom_scalars({"loss": {"both": ["Multiline", ["train", "val"]]}})
        """
        self._add(custom_scalars.encode(layout), None, None)

    def add_custom_scalars_multilinechart(
        self, tags: Sequence[str], category: str = "default", title: str = "untitled"
    ) -> None:
        """One multi-line chart of ``tags`` (shorthand for :meth:`add_custom_scalars`)."""
        self.add_custom_scalars({category: {title: ["Multiline", list(tags)]}})

    def add_custom_scalars_marginchart(
        self, tags: Sequence[str], category: str = "default", title: str = "untitled"
    ) -> None:
        """One margin chart of three tags: value, lower, upper."""
        self.add_custom_scalars({category: {title: ["Margin", list(tags)]}})

    def add_embedding(
        self,
        mat: object,
        metadata: Sequence[object] | None = None,
        label_img: object = None,
        global_step: int | None = None,
        tag: str = "default",
        metadata_header: Sequence[object] | None = None,
    ) -> None:
        """Save points (rows of ``mat``) for TensorBoard's embedding projector.

        Writes ``<log_dir>/<step:05d>/<tag>/tensors.tsv`` (+ ``metadata.tsv`` with labels,
        + ``sprite.png`` from ``label_img`` N x C x H x W in [0, 1]) and rewrites
        ``<log_dir>/projector_config.pbtxt``, as torch's writer does.

        Example:
            >>> import numpy as np, tempfile
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_embedding(np.random.rand(4, 3), metadata=["a", "b", "c", "d"])
        """
        self._check_open()
        step = 0 if global_step is None else _step(global_step)
        sub = embedding.subdir(step, _tag(tag))
        files = {"tensors.tsv": embedding.tensors_tsv(mat)}
        points = _points(mat)
        info = embedding.EmbeddingInfo(
            tensor_name=f"{tag}:{str(step).zfill(5)}", tensor_path=f"{sub}/tensors.tsv"
        )
        if metadata is not None:
            files["metadata.tsv"] = embedding.metadata_tsv(metadata, points, metadata_header)
            info = replace(info, metadata_path=f"{sub}/metadata.tsv")
        if label_img is not None:
            files["sprite.png"], dim = embedding.sprite_png(label_img, points)
            info = replace(info, sprite_path=f"{sub}/sprite.png", sprite_dim=dim)
        from tensorsight.summary._fs import is_remote

        if is_remote(self.log_dir):
            msg = (
                f"add_embedding: SummaryWriter {self.log_dir!r} is a URL. Expected a local "
                "log_dir (the projector's files are written as folders)."
            )
            raise UsageError(msg)
        folder = os.path.join(self.log_dir, sub)
        if os.path.exists(folder) and not os.path.isdir(folder):
            msg = (
                f"Embedding folder {folder!r}: a file is in the way. Expected a folder or nothing."
            )
            raise UsageError(msg)
        os.makedirs(folder, exist_ok=True)
        for name, content in files.items():
            with open(os.path.join(folder, name), "wb") as f:
                f.write(content)
        self._embeddings.append(info)
        with open(os.path.join(self.log_dir, "projector_config.pbtxt"), "wb") as f:
            f.write(embedding.config_pbtxt(self._embeddings))

    def add_graph(
        self,
        model: Any,
        input_to_model: object = None,
        verbose: bool = False,
        use_strict_trace: bool = True,
    ) -> None:
        """Log the graph of a torch model, with dtypes and module paths per op.

        Runs ``model`` once on ``input_to_model`` (call it inside ``torch.autocast`` to
        record reduced-precision dtypes). ``verbose`` logs the node count at DEBUG level;
        ``use_strict_trace`` is accepted for compatibility (nothing is traced).

        Example:
            >>> import tempfile, torch
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_graph(torch.nn.Linear(4, 2), torch.zeros(1, 4))
        """
        del use_strict_trace  # compatibility only
        self._check_open()
        from tensorsight.summary.graph import build_graph_def

        graph = build_graph_def(model, input_to_model)
        if verbose:
            import logging

            logging.getLogger(__name__).info("add_graph: %d nodes", len(graph.node))
        event = _Event(wall_time=time.time(), graph_def=graph.SerializeToString())
        self._main.add_event(event)

    # ---------------------------------------------------------------- tensorsight kinds
    def add_tensor(
        self,
        tag: str,
        tensor: object,
        global_step: int | None = None,
        walltime: float | None = None,
    ) -> None:
        """Log a whole tensor bit-exactly (bf16/fp16 kept; at most 512 MiB of raw bytes).

        Raises:
            UsageError: Unsupported dtype, or the tensor is bigger than the limit.

        Example:
            >>> import numpy as np, tempfile
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_tensor("logits", np.arange(6, dtype=np.float16).reshape(2, 3), 0)
        """
        self._add(tensor_kind.encode(_tag(tag), tensor), global_step, walltime)

    def add_data_graph(self, tag: str, pipeline: object, global_step: int | None = None) -> None:
        """Log the stages of an input pipeline (a DataLoader, Dataset, or a graph dict).

        Example:
            >>> import tempfile
            >>> graph = {"nodes": [{"id": "ds", "type": "MNIST", "label": "MNIST", "params": {}}],
            ...          "edges": []}
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_data_graph("train_data", graph)
        """
        from tensorsight.summary.data_graph import describe_pipeline

        graph = describe_pipeline(pipeline)
        self._add(data_graph.encode(_tag(tag), graph), global_step, None)

    def add_landscape(
        self,
        tag: str,
        values: object,
        x_coords: object,
        y_coords: object,
        path: object = None,
        global_step: int | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        """Log a 2-D loss landscape (``values[j][i]`` at ``(x[i], y[j])``) and a training path.

        Example:
            >>> import numpy as np, tempfile
            >>> x = y = np.linspace(-1, 1, 5)
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     w.add_landscape("loss", np.add.outer(y**2, x**2), x, y, path=[(0.9, 0.9)])
        """
        value = landscape.encode(_tag(tag), values, x_coords, y_coords, path, metadata)
        self._add(value, global_step, None)

    # ---------------------------------------------------------------- lifecycle
    def flush(self) -> None:
        """Write everything queued to disk (every run this writer owns)."""
        for writer in self._writers.values():
            writer.flush()

    def close(self) -> None:
        """Flush and close every event file; later ``add_*`` calls raise. Closing twice is fine."""
        if self._closed:
            return
        self._closed = True
        for writer in self._writers.values():
            writer.close()

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        self.close()


def _tag(tag: object) -> str:
    if type(tag) is str:
        return tag
    msg = f"Tag {tag!r}: got {type(tag).__name__}. Expected a str such as 'loss/train'."
    raise UsageError(msg)


def _run_name(name: str, what: str) -> str:
    """``name`` if it stays inside the log dir as a relative path; else a UsageError."""
    parts = name.replace("\\", "/").split("/")
    if not name or os.path.isabs(name) or ".." in parts:
        msg = (
            f"{what} {name!r}: it would leave the log dir. Expected a relative name without "
            "'..', such as 'train'."
        )
        raise UsageError(msg)
    return name


def _points(mat: object) -> int:
    """Number of rows of an embedding matrix (already checked to be 2-D)."""
    shape = getattr(mat, "shape", None)
    return int(shape[0]) if shape is not None else len(mat)  # type: ignore[arg-type]


def _step(step: object) -> int:
    if type(step) is int:
        return step
    try:
        return int(step)  # type: ignore[call-overload,no-any-return]
    except (TypeError, ValueError) as exc:
        msg = f"Global step {step!r}: not an integer. Expected an int (or a 1-element tensor)."
        raise UsageError(msg) from exc
