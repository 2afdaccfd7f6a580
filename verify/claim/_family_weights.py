r"""Instance families from real Transformer weights (``kind = "weights"``).

Each instance is one attention head of a checkpoint (:mod:`verify.weights`) in the head-space
reading $(Q_{head}, K_{head}, V_{head})$, $d = d_{head}$, started at the real embeddings of
one sentence projected on the head's output subspace (:func:`verify.weights.sentence_instance`).
The heads are listed in the file (``"L.h"``); the claim's hypotheses are still decided exactly
on every instance, so a listed head that is not, say, a good triple is *out of scope*.

When the weights or the optional extra are not installed, every instance is *out of scope*
with the install command as its reason (:class:`verify.errors.OutOfScope`); the file still
loads, so ``verify run`` without the extra keeps working.

Examples
--------
>>> fam = parse_weights_family({"name": "minilm", "kind": "weights", "heads": ["3.9"],
...                             "sentence": "The cat sat.", "n": 5, "d": 32, "horizon": 6},
...                            0, "<doc>")
>>> fam.count, fam.n, fam.d, fam.seed_of(0), fam.to_json()["heads"]
(1, 5, 32, None, ['3.9'])
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from fractions import Fraction

from verify.claim._family_fields import NAME_RE, _check_keys, _checkpoints, _int, _number
from verify.errors import InvalidArgument
from verify.exact.plain import fail, to_plain
from verify.weights import embed, head_weights, load_weights, sentence_instance, tokenize
from verify.weights._sentence import VARIANTS

__all__ = ["WeightsFamily", "parse_weights_family", "WEIGHTS_KEYS"]

WEIGHTS_KEYS = ("name", "kind", "description", "source", "heads", "sentence", "variant", "n",
                "d", "horizon", "checkpoints", "precision")
_HEAD = re.compile(r"^(\d+)\.(\d+)$")


@functools.lru_cache(maxsize=2)
def _weights(source: str | None):
    return load_weights(source)


@dataclass(frozen=True)
class WeightsFamily:
    """One ``kind = "weights"`` family (see the module docstring).

    ``count`` is the number of listed heads; instance ``k`` is head ``heads[k]``.
    """

    name: str
    heads: tuple
    sentence: str
    source: str | None
    variant: str
    n: int
    d: int
    horizon: Fraction
    checkpoints: int | tuple | None
    precision: str | int
    description: str = ""
    kind: str = "weights"
    seed: None = None

    @property
    def count(self) -> int:
        return len(self.heads)

    @property
    def model(self) -> dict:
        return dict(VARIANTS[self.variant])

    def seed_of(self, k: int, seed: int | None = None) -> None:
        return None

    def instance(self, k: int, seed: int | None = None):
        """Head ``heads[k]`` on the sentence; :class:`~verify.errors.OutOfScope` when the
        weights are not installed, ``InvalidArgument`` when they contradict the file."""

        if not 0 <= k < self.count:
            raise InvalidArgument(f"family {self.name!r} lists {self.count} heads: k={k} must "
                                  f"be in [0, {self.count - 1}].")
        weights = _weights(self.source)
        layer, head = (int(v) for v in _HEAD.match(self.heads[k]).groups())
        pieces, ids = tokenize(weights, self.sentence)
        hw = head_weights(weights, layer, head)
        for key, value, actual in (("n", self.n, len(ids)), ("d", self.d, hw.d_head)):
            if value != actual:
                raise InvalidArgument(f"family {self.name!r}: {key} = {value} but the weights "
                                      f"give {key} = {actual} ({' '.join(pieces)}).")
        return sentence_instance(hw, embed(weights, ids), self.variant,
                                 name=f"{self.name}#{k}")

    def instances(self, count: int | None = None, seed: int | None = None) -> list:
        return [self.instance(k) for k in range(min(count or self.count, self.count))]

    def to_json(self) -> dict:
        out = {"name": self.name, "kind": self.kind, "description": self.description,
               "source": self.source, "heads": list(self.heads), "sentence": self.sentence,
               "variant": self.variant, "n": self.n, "d": self.d,
               "horizon": to_plain(self.horizon), "checkpoints": to_plain(self.checkpoints),
               "precision": self.precision}
        return {k: v for k, v in out.items() if v is not None}


def parse_weights_family(table: dict, index: int, source: str) -> WeightsFamily:
    """Validate a ``kind = "weights"`` table; errors name ``families[index].<field>``.

    Nothing is loaded here: the weights are read when an instance is built.
    """

    here = f"families[{index}]"
    _check_keys(table, WEIGHTS_KEYS, here, source)
    for key in ("name", "heads", "sentence", "n", "d", "horizon"):
        if key not in table:
            fail(source, f"{here}.{key}", "missing (required for kind = 'weights').")
    if not isinstance(table["name"], str) or not NAME_RE.match(table["name"]):
        fail(source, f"{here}.name", f"{table['name']!r} must be kebab-case (e.g. 'minilm').")
    heads = table["heads"]
    if not isinstance(heads, list) or not heads or not all(
            isinstance(h, str) and _HEAD.match(h) for h in heads):
        fail(source, f"{here}.heads", f"{heads!r} must be a non-empty list of \"L.h\" strings "
             "(layer and head, 0-based), e.g. [\"3.9\"].")
    sentence = table["sentence"]
    if not isinstance(sentence, str) or not sentence.strip():
        fail(source, f"{here}.sentence", "must be a non-empty string.")
    variant = table.get("variant", "plain")
    if variant not in VARIANTS:
        fail(source, f"{here}.variant", f"{variant!r} must be one of {sorted(VARIANTS)}.")
    weights_source = table.get("source")
    if weights_source is not None and not isinstance(weights_source, str):
        fail(source, f"{here}.source", "must be a path (a folder of weights) or absent.")
    horizon = _number(table["horizon"], f"{here}.horizon", source)
    if horizon <= 0:
        fail(source, f"{here}.horizon", f"{horizon} must be positive.")
    precision = table.get("precision", "float64")
    if precision not in ("float64", "auto") and not (isinstance(precision, int) and
                                                     precision >= 16):
        fail(source, f"{here}.precision", f"{precision!r} must be 'float64', 'auto' or a "
             "number of digits ≥ 16.")
    description = table.get("description", "")
    if not isinstance(description, str):
        fail(source, f"{here}.description", "must be a string.")
    return WeightsFamily(
        table["name"], tuple(heads), sentence, weights_source, variant,
        _int(table["n"], f"{here}.n", source, 1), _int(table["d"], f"{here}.d", source, 1),
        horizon, _checkpoints(table.get("checkpoints"), horizon, f"{here}.checkpoints", source),
        precision, description.strip())
