r"""A real sentence as initial tokens: BERT's tokenizer and embeddings, then one head's dynamics.

:func:`tokenize` reads the checkpoint's ``tokenizer.json`` with the ``tokenizers`` package
(WordPiece, lower-casing, ``[CLS] … [SEP]`` as the model sees it).  :func:`embed` forms BERT's
input embeddings

.. math:: x_i = \operatorname{LN}\big(E_{word}[t_i] + E_{pos}[i] + E_{type}[0]\big),
    \qquad \operatorname{LN}(u) = \gamma \odot \frac{u - \bar u}{\sqrt{\operatorname{var} u +
    \varepsilon}} + \beta_{LN},

in float64 from the float32 tables.  :func:`head_tokens` maps them to the head space
$\operatorname{im} W_O[:, h]$: $y_i$ are the coordinates of the orthogonal projection of $x_i$
on that subspace ($W_O^\top W_O\, y_i = W_O^\top x_i$), so that the model-reading dynamics
started at $W_O y_i$ is exactly $W_O$ times the head-space dynamics of $y$ (see
:mod:`verify.weights._heads`).  :func:`sentence_instance` builds the
:class:`~verify.model.Instance`: the plain model (rescaled $z$) or post-LN tokens on the sphere
of the head space.

Examples
--------
>>> import numpy as np
>>> W_O = np.array([[2.0], [0.0]])
>>> head_tokens(W_O, np.array([[1.0, 5.0], [-4.0, 1.0]])).tolist()
[[0.5], [-2.0]]
"""

from __future__ import annotations

import numpy as np

from verify.errors import InvalidArgument
from verify.model import Instance, Model
from verify.weights._heads import HeadWeights
from verify.weights._source import INSTALL_HINT, Weights, WeightsUnavailable

__all__ = ["tokenize", "embed", "head_tokens", "sentence_instance", "VARIANTS",
           "DEFAULT_SENTENCE"]

#: the model variants a sentence is run in: the paper's plain model and post-LN on the sphere
VARIANTS = {"plain": {"form": "z"}, "sphere": {"form": "x", "normalisation": "sphere"}}
DEFAULT_SENTENCE = "The cat sat on the mat because it was tired."


def tokenize(weights: Weights, sentence: str) -> tuple[list[str], list[int]]:
    """The word pieces and ids of ``sentence`` (with ``[CLS]`` and ``[SEP]``)."""
    if not isinstance(sentence, str) or not sentence.strip():
        raise InvalidArgument(f"sentence={sentence!r} must be a non-empty string.")
    try:
        sentence.encode("utf-8")
    except UnicodeEncodeError:  # bytes of another encoding, escaped by the command line
        raise InvalidArgument(f"sentence={sentence!r} is not valid UTF-8 text.") from None
    if weights.tokenizer_json is None:
        raise InvalidArgument(f"{weights.source} has no tokenizer.json; a sentence needs it.")
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise WeightsUnavailable(f"tokenising needs the optional extra: `{INSTALL_HINT}`.") \
            from None
    try:
        tokenizer = Tokenizer.from_str(weights.tokenizer_json)
    except Exception as exc:  # noqa: BLE001 - the library's own parse error, reworded
        raise InvalidArgument(f"{weights.source}: tokenizer.json is not a tokenizer file "
                              f"({exc}).") from None
    tokenizer.no_padding()  # the checkpoint pads to 128: a sentence is only its own tokens
    tokenizer.no_truncation()
    encoding = tokenizer.encode(sentence)
    return list(encoding.tokens), [int(i) for i in encoding.ids]


def embed(weights: Weights, ids: list[int]) -> np.ndarray:
    """BERT's input embeddings of the token ids (``n × d_model``, float64)."""
    word = weights.tensor("embeddings.word_embeddings.weight").astype(np.float64)
    position = weights.tensor("embeddings.position_embeddings.weight").astype(np.float64)
    kind = weights.tensor("embeddings.token_type_embeddings.weight").astype(np.float64)
    if len(ids) > len(position):
        raise InvalidArgument(f"{len(ids)} tokens exceed the {len(position)} positions.")
    u = word[np.asarray(ids)] + position[: len(ids)] + kind[0]
    eps = float(weights.config.get("layer_norm_eps", 1e-12))
    u = (u - u.mean(axis=1, keepdims=True)) / np.sqrt(u.var(axis=1, keepdims=True) + eps)
    return u * weights.tensor("embeddings.LayerNorm.weight") + \
        weights.tensor("embeddings.LayerNorm.bias")


def head_tokens(W_O: np.ndarray, x: np.ndarray) -> np.ndarray:
    r"""Coordinates $y_i$ of the orthogonal projection of each $x_i$ on $\operatorname{im}
    W_O$ (least squares, float64)."""
    W = np.asarray(W_O, dtype=np.float64)
    return np.linalg.lstsq(W, np.asarray(x, dtype=np.float64).T, rcond=None)[0].T


def sentence_instance(head: HeadWeights, x: np.ndarray, variant: str = "plain",
                      name: str = ""):
    """The :class:`~verify.model.Instance` of ``head`` (head-space reading) started at the
    projected tokens of ``x`` (``n × d_model``); ``variant`` is a key of :data:`VARIANTS`
    (``"sphere"`` normalises the tokens to the unit sphere first).  Tokens enter at their
    float64 binary value; the weights exactly."""

    if variant not in VARIANTS:
        raise InvalidArgument(f"variant={variant!r} must be one of {sorted(VARIANTS)}.")
    y = head_tokens(head.W_O, x)
    if variant == "sphere":
        y = y / np.linalg.norm(y, axis=1, keepdims=True)
    Q, K, V = head.head_space()
    model = Model(V=V, Q=Q, K=K, beta=head.beta, **VARIANTS[variant])
    return Instance(model, y, name=name or f"head {head.name}, {variant}")
