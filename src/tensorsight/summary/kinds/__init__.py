"""One module per data kind: its record type, its encoders and its decoder.

Each kind module defines ``KIND`` (the kind name used by readers and the board),
``PLUGIN_NAME`` (the plugin name of its values in event files, where it has one),
``SCHEMA_VERSION`` (of its payload), its frozen record type, pure ``encode*`` functions that
turn user inputs into ``Summary.Value`` messages, a ``decode`` function for the read side, and
``SPEC``, its :class:`~tensorsight.summary.kinds._kind.Kind`. Nothing here does I/O;
``writer.py`` wraps the values into events and hands them to the event file.

:data:`KINDS` lists every kind the reader returns, in the order ``Logdir.tags(run)`` reports
them; adding a kind is its module plus one line here. Entries are imported on first use.
"""

from __future__ import annotations

from tensorsight._registry import Registry
from tensorsight.summary.kinds._kind import Kind, Raw

__all__ = ["KINDS", "Kind", "Raw"]

#: Kind name -> its module's ``SPEC`` (registration order = ``Logdir.tags`` order).
KINDS: Registry[Kind] = Registry("data kind")
KINDS.add("scalars", "tensorsight.summary.kinds.scalar:SPEC")
KINDS.add("histograms", "tensorsight.summary.kinds.histogram:SPEC")
KINDS.add("images", "tensorsight.summary.kinds.image:SPEC")
KINDS.add("audio", "tensorsight.summary.kinds.audio:SPEC")
KINDS.add("text", "tensorsight.summary.kinds.text:SPEC")
KINDS.add("tensors", "tensorsight.summary.kinds.tensor:SPEC")
KINDS.add("pr_curves", "tensorsight.summary.kinds.pr_curve:SPEC")
KINDS.add("hparams", "tensorsight.summary.kinds.hparams:SPEC")
KINDS.add("graphs", "tensorsight.summary.kinds.graph:SPEC")
KINDS.add("landscapes", "tensorsight.summary.kinds.landscape:SPEC")
KINDS.add("data_graphs", "tensorsight.summary.kinds.data_graph:SPEC")
KINDS.add("embeddings", "tensorsight.summary.kinds.embedding:SPEC")
KINDS.add("mesh", "tensorsight.summary.kinds.mesh:SPEC")
