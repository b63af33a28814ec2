"""``python -m tensorsight`` runs the command line."""

from tensorsight.cli import entry

entry()
