"""Every exception tensorsight raises on purpose, in one place.

Hierarchy::

    TensorsightError                     root of everything a user can cause and fix
    ├── UsageError(ValueError)           a bad argument or option value
    ├── MissingDependencyError(ImportError)
    │                                    an optional part is not installed (names the pip extra)
    ├── RegistryError(KeyError)          unknown or duplicate name in an extension registry
    ├── InputFileError(OSError)          a named input file or folder is missing or unreadable
    ├── SchemaVersionError(ValueError)   a file was written by a newer, unknown format version
    ├── EventFileError                   a summary event file cannot be read   (summary/)
    ├── DumpFormatError                  a dump folder is not a valid dump     (capture/)
    ├── CaptureError                     capturing a run failed                (capture/)
    ├── CompareError                     two dumps cannot be compared          (compare/)
    ├── AnomalyError(FloatingPointError) tensorsight.watch saw NaN/Inf/overflow/... (monitor/)
    └── MigrationError                   a migration cannot run                (migrate/)

    InternalError(RuntimeError)          a bug in tensorsight; deliberately *not* a
                                         TensorsightError, so it is never shown as a
                                         one-line user error

The command line prints any ``TensorsightError`` as one ``error: ...`` line and exits
with code 2; everything else is a bug and keeps its traceback.

Results are not exceptions: a tolerance miss is a verdict in a comparison, a rule that
cannot apply is a per-file result of a migration.
"""

from __future__ import annotations

__all__ = [
    "AnomalyError",
    "CaptureError",
    "CompareError",
    "DumpFormatError",
    "EventFileError",
    "InputFileError",
    "InternalError",
    "MigrationError",
    "MissingDependencyError",
    "RegistryError",
    "SchemaVersionError",
    "TensorsightError",
    "UsageError",
]


class TensorsightError(Exception):
    """Root of all errors a user can cause and fix; the CLI prints them as one line."""

    def __str__(self) -> str:
        # KeyError subclasses would otherwise print their message in quotes.
        return str(self.args[0]) if len(self.args) == 1 else super().__str__()


class UsageError(TensorsightError, ValueError):
    """A bad argument or option value."""


class MissingDependencyError(TensorsightError, ImportError):
    """An optional dependency is missing; the message names the pip extra to install."""


class RegistryError(TensorsightError, KeyError):
    """An unknown or duplicate name in an extension registry."""


class InputFileError(TensorsightError, OSError):
    """A named input file or folder does not exist or cannot be read."""


class SchemaVersionError(TensorsightError, ValueError):
    """A file declares a schema version this tensorsight does not know."""


class EventFileError(TensorsightError):
    """A summary event file cannot be read."""


class DumpFormatError(TensorsightError):
    """A folder is not a readable dump."""


class CaptureError(TensorsightError):
    """Capturing a run failed."""


class CompareError(TensorsightError):
    """Two dumps cannot be compared."""


class AnomalyError(TensorsightError, FloatingPointError):
    """``tensorsight.watch(..., on_anomaly="raise")`` saw a bad tensor; the message names it."""


class MigrationError(TensorsightError):
    """A migration cannot run."""


class InternalError(RuntimeError):
    """A bug in tensorsight. Not a TensorsightError: it must keep its traceback."""
