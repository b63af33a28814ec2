"""Loss landscapes of a PyTorch model: the loss on a 2-D plane through its weights.

:func:`compute` evaluates ``loss_fn(model(inputs), targets)`` on a ``grid x grid`` lattice
``w + a*d1 + b*d2`` around the model's current weights ``w``, along two directions:

* ``"random"``: filter-normalised Gaussian directions (Li et al., 2018, "Visualizing the Loss
  Landscape of Neural Nets"): each filter (slice along the first dimension) of a direction
  is rescaled to the norm of the same filter of the weights; 1-D parameters (biases,
  normalisation weights) get a zero direction.
* ``"pca"``: the first two principal components of a checkpoint trajectory, with each
  checkpoint projected onto the plane as the training path (as MindSpore's
  ``SummaryLandscape`` does).

The result is a frozen :class:`Landscape`; log it with :meth:`Landscape.write` (or
``writer.add_landscape(...)``) and look at it in the board's *Landscapes* tab. torch is
imported only when :func:`compute` runs (``pip install 'tensorsight[torch]'``).

Example:
    >>> import torch
    >>> import tensorsight.landscape as tl
    >>> model = torch.nn.Linear(3, 1)
    >>> batch = (torch.randn(8, 3), torch.randn(8, 1))
    >>> ls = tl.compute(model, torch.nn.functional.mse_loss, [batch], grid=5)
    >>> ls.values.shape
    (5, 5)
"""

from __future__ import annotations

from tensorsight.landscape.compute import Landscape, compute

__all__ = ["Landscape", "compute"]
