"""The single source of tensorsight's version (read by hatchling and ``--version``)."""

__version__ = "0.1.0.dev0"
