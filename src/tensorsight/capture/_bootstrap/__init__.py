"""The folder ``tensorsight dump`` puts first on the child's ``PYTHONPATH`` (see ``_launch.py``).

Only ``sitecustomize.py`` matters: Python imports it at start-up in every process that
inherits the environment, so the hook reaches torchrun's workers too.
"""
