"""Built-in rule sets, one sub-package each (``accelerator``, ``npu``, ``xpu``, ``mps``)."""
