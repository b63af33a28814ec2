"""Standalone model-graph files in a logdir (MindSpore ``*.pb``, ONNX ``*.onnx``).

Such a file is one message, not a stream of records: it is read whole, again whenever its
size or modification time changes, and becomes one ``graphs`` item of the run whose folder
holds it. A file that cannot be decoded is still listed, as a graph with no nodes and an
``error`` that says why (and the reason is reported as a problem), so the board shows the
user what went wrong instead of silently leaving the file out.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from tensorsight.summary import _fs
from tensorsight.summary._tbdecode import Item
from tensorsight.summary.reader import Batch, EventFileReader
from tensorsight.summary.records import Graph

__all__ = ["MAX_GRAPH_FILE_BYTES", "GraphFileReader"]

MAX_GRAPH_FILE_BYTES = 2**31 - 1  # protobuf cannot parse a larger message


class GraphFileReader(EventFileReader):
    """Base of the whole-file graph readers: subclasses set ``suffix`` and ``_decode``."""

    suffix = ""

    def _fast_scalars(self) -> bool:
        return False

    def tag(self) -> str:
        """The graph's tag: the file name (without ``suffix`` when it is set)."""
        name = os.path.basename(self.path)
        return name[: -len(self.suffix)] if self.suffix and name.endswith(self.suffix) else name

    def _decode(self, data: bytes, tag: str) -> Graph:
        """Decode the file's bytes; raise ``ValueError`` with a reason when they are no graph."""
        raise NotImplementedError

    def read(self, sink: Callable[[Batch], None] | None = None) -> Batch:
        batch = self._read_graph()
        if sink is None or not batch.items:
            return batch
        sink(batch)
        return Batch(problems=batch.problems, records=batch.records, bytes_read=batch.bytes_read)

    def _read_graph(self) -> Batch:
        batch = Batch()
        info = _fs.stat(self.path)
        if info.size == self.size and info.mtime == self.mtime and self.offset == info.size:
            return batch
        self.mtime = info.mtime
        tag = self.tag()
        if info.size > MAX_GRAPH_FILE_BYTES:
            reason = f"{info.size} bytes is over the {MAX_GRAPH_FILE_BYTES}-byte protobuf limit"
            graph = None
        else:
            data = _fs.read_range(self.path, 0, info.size)
            batch.bytes_read = len(data)
            try:
                graph = self._decode(data, tag)
                reason = ""
            except ValueError as exc:
                graph, reason = None, str(exc)
            except Exception as exc:  # a damaged file must not stop the logdir
                graph, reason = None, f"could not be decoded ({type(exc).__name__}: {exc})"
        self.size = self.offset = info.size
        if graph is None:
            batch.problems.append(f"Graph file {self.path!r}: {reason}; listed without nodes.")
            graph = Graph(0, 0.0, (), self.format, tag, error=reason)
        # wall_time 0: a file's mtime is not a training time, so it stays out of the run's range
        batch.items.append(Item(self.records, "graphs", tag, 0, 0.0, graph))
        self.records += 1
        batch.records = 1
        return batch
