r"""The model family and its instances (the second floor).

* :mod:`verify.model._model` — :class:`Model` (weights and variant, one object answering every
  "which variant?" question) and :class:`Instance` (a model and its initial tokens);
* :mod:`verify.model.instance_file` — instance files: a model, its tokens and the simulation
  settings in TOML.
"""

from verify.model._model import (
    ACTIVATIONS,
    ATTENTIONS,
    BOUNDED_SCORES,
    FORMS,
    MLP,
    NORMALISATIONS,
    Head,
    Instance,
    Model,
)

__all__ = ["FORMS", "ATTENTIONS", "NORMALISATIONS", "ACTIVATIONS", "BOUNDED_SCORES", "Head", "MLP",
           "Model", "Instance"]
