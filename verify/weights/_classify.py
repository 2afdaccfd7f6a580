r"""The paper's hypotheses on every head of a checkpoint, decided with certified spectra.

For each head (see :mod:`verify.weights._heads` for the two readings) :func:`classify_head`
calls the exact predicates of :mod:`verify.exact` on the head-space matrices
$(Q_{head}, K_{head}, V_{head})$, $32 \times 32$ exact rationals: the characteristic polynomial is
factored over $\mathbb Q$ and its roots isolated in certified balls, so every "yes"/"no" below is
certified, and a comparison the balls cannot separate (up to 1024 bits) is reported as
undecided (``None``), never guessed.

* *leading real, positive, simple*: $\lambda_1 > |\lambda_2|$, $\lambda_1$ of algebraic
  multiplicity 1;
* *good triple* (Definition 4.1): the above and $\langle Q\varphi_1, K\varphi_1\rangle > 0$;
* *paranormal* (Definition 5.1, the condition on $V$): $\lambda_1$ real, positive, strictly
  dominant and semisimple; ``good_triple_with_multiplicity`` adds $Q^\top K \succ 0$;
* *complex leading pair*: the eigenvalues of largest modulus are one non-real conjugate pair;
* $k$ (Conjecture 4.3): eigenvalues with positive real part, with multiplicity.

In the model reading the head-space answers carry over (same non-zero spectrum and
$\langle Q\varphi_1, K\varphi_1\rangle$), $d_{model} - d_{head}$ zero eigenvalues are added,
and $Q^\top K \succ 0$ fails (rank).

Examples
--------
>>> import numpy as np
>>> from verify.weights._heads import HeadWeights
>>> eye = np.eye(2, dtype=np.float32)
>>> c = classify_head(HeadWeights(0, 0, eye, eye, np.diag([2, -1]).astype(np.float32), eye))
>>> c.good_triple, c.real_positive_simple, c.k, c.summary
(True, True, 1, 'good triple (λ_1 = 2); k = 1 eigenvalue with Re > 0')
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from verify.errors import InvalidArgument
from verify.exact import spectral_class
from verify.exact._common import fmt
from verify.weights._heads import SPACES, HeadWeights, head_weights

__all__ = ["HeadClass", "classify_head", "classify_heads", "count_classes"]


@dataclass(frozen=True)
class HeadClass:
    """The certified class of one head.  Booleans are ``None`` when undecided.

    Attributes
    ----------
    layer, head : int
    space : {"model", "head"}
    d : int
        Dimension of the tokens in this reading.
    leading : str
        $\\lambda_1$ (or the leading pair) as a certified ball, displayed.
    leading_modulus, second_modulus : float
        Midpoints of the certified balls of $|\\lambda_1|$ and of the next distinct modulus.
    real_positive_simple, good_triple, paranormal, complex_leading_pair, qk_positive_definite
        : bool or None
    qk_phi : float or None
        $\\langle Q\\varphi_1, K\\varphi_1\\rangle$ (with $\\beta$, midpoint; its sign is
        certified by ``good_triple``) when $\\lambda_1$ qualifies.
    k : int or None
        Conjecture 4.3's count.
    zero_multiplicity : int
        Algebraic multiplicity of the eigenvalue 0 in this reading.
    eigenvalues : list of (float, float, float)
        The non-zero spectrum: (real, imaginary, ball radius) of each eigenvalue, repeated by
        multiplicity (for the figure).
    explanation, summary : str
    """

    layer: int
    head: int
    space: str
    d: int
    leading: str
    leading_modulus: float
    second_modulus: float | None
    real_positive_simple: bool | None
    good_triple: bool | None
    paranormal: bool | None
    complex_leading_pair: bool | None
    qk_positive_definite: bool | None
    qk_phi: float | None
    k: int | None
    zero_multiplicity: int
    eigenvalues: list
    explanation: str
    summary: str

    @property
    def name(self) -> str:
        return f"{self.layer}.{self.head}"

    def to_json(self) -> dict:
        return {"name": self.name, **asdict(self)}


def _leading_text(spec) -> tuple[str, float, float | None]:
    group, _ = spec.leading()
    top = group[0]
    if len(group) == 2 and not top.is_real and not group[1].is_real:
        text = f"{fmt(top.enclosure.real)} ± {fmt(abs(top.enclosure.imag))}i"
    else:
        text = ", ".join(str(e) for e in group)
    rest = [e for e in spec.eigenvalues if all(e is not g for g in group)]
    second = float(rest[0].modulus.mid()) if rest else None
    return text, float(top.modulus.mid()), second


def _float_of(value) -> float | None:
    """Midpoint of a Fraction or ``arb`` (display only; signs are decided by the checks)."""
    if value is None:
        return None
    try:
        return float(value.mid()) if hasattr(value, "mid") else float(value)
    except TypeError:  # an element of Q(λ_1): shown in the explanation only
        return None


def classify_head(weights: HeadWeights, space: str = "model") -> HeadClass:
    """Classify one head (see the module docstring); ``space`` is ``"model"`` or ``"head"``."""

    if space not in SPACES:
        raise InvalidArgument(f"space={space!r} must be one of {SPACES}.")
    Q, K, V = weights.head_space()
    cls = spectral_class(weights.beta * Q, K, V)
    spec = cls["spectrum"]
    zero = sum(e.algebraic_multiplicity for e in spec.eigenvalues if e.rational == 0)
    nonzero = [(float(e.enclosure.real.mid()), float(e.enclosure.imag.mid()), e.radius)
               for e in spec.eigenvalues if e.rational != 0
               for _ in range(e.algebraic_multiplicity)]
    para, good = cls["paranormal"], cls["good_triple"]
    rps = None if para.holds is None else bool(para.holds and para.data["dim_F"] == 1)
    leading, modulus, second = _leading_text(spec)
    qk_phi = _float_of(good.data.get("qk_phi"))
    pd = cls["qk_positive_definite"].holds
    explanation = " ".join(c.explanation for c in (good, cls["complex_leading_pair"],
                                                   cls["positive_real_part_count"]))
    d, summary = weights.d_head, cls["summary"]
    if space == "model" and weights.d_model > weights.d_head:
        d = weights.d_model
        zero += d - weights.d_head
        pd = False  # rank B <= d_head < d
        summary = _model_summary(summary, cls)
    return HeadClass(weights.layer, weights.head, space, d, leading, modulus, second, rps,
                     good.holds, para.holds, cls["complex_leading_pair"].holds, pd, qk_phi,
                     cls["positive_real_part_count"].value, zero, nonzero, explanation,
                     summary)


def _model_summary(summary: str, cls: dict) -> str:
    """The head-space summary read in R^d_model: there V_head = ±I is ±(a projection)."""
    first, _, rest = summary.partition("; ")
    if first == "V = I":
        first = f"paranormal, dim F = {cls['paranormal'].data['dim_F']}"
    elif first == "V = -I":
        first = "λ_1 = -1 not positive"
    return "; ".join(p for p in (first, rest) if p)


def _classify_pair(args: tuple) -> HeadClass:
    weights, space = args
    return classify_head(weights, space)


def classify_heads(weights, space: str = "model", heads: list | None = None,
                   jobs: int = 1) -> list[HeadClass]:
    """:func:`classify_head` for every head of a :class:`~verify.weights.Weights` (or the
    ``(layer, head)`` pairs in ``heads``), layer by layer; ``jobs > 1`` spreads the heads over
    that many processes (same answers: every step is exact or certified)."""

    pairs = heads if heads is not None else [(L, h) for L in range(weights.n_layers)
                                             for h in range(weights.n_heads)]
    tasks = [(head_weights(weights, L, h), space) for L, h in pairs]
    if jobs <= 1 or len(tasks) < 2:
        return [_classify_pair(t) for t in tasks]
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(_classify_pair, tasks, chunksize=max(1, len(tasks) // (4 * jobs))))


def count_classes(classes: list[HeadClass]) -> dict:
    """How many heads are certified in each class (``undecided`` counts the ``None``)."""
    keys = ("real_positive_simple", "good_triple", "paranormal", "complex_leading_pair",
            "qk_positive_definite")
    out = {key: sum(getattr(c, key) is True for c in classes) for key in keys}
    out["undecided"] = sum(any(getattr(c, key) is None for key in keys) for c in classes)
    out["heads"] = len(classes)
    return out
