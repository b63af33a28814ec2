"""One module per data kind that SummaryWriter writes.

Each kind module defines ``KIND`` (the kind name used by readers and the board),
``SCHEMA_VERSION`` (of its payload), and pure ``encode*`` functions that turn user
inputs into ``Summary.Value`` messages. Nothing here does I/O; ``writer.py`` wraps the
values into events and hands them to the event file.
"""

from __future__ import annotations

__all__: list[str] = []
