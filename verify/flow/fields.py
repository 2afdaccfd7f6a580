r"""Vector fields of the model family, all built on one score/attention kernel.

Scores are handled as a pair ``(S̃, L)`` with ``S = e^{L} S̃``: for the rescaled form
``S̃_ij = <Q Ẽ(t) z_i, K Ẽ(t) z_j>`` and ``L = 2 μ t`` (see :mod:`verify.flow.exponential`), for the
token form ``S̃ = β <Q x_i, K x_j>`` and ``L = 0``. The kernel :func:`attention_weights` turns them
into attention weights in log-sum-exp form,

.. math:: P_{ij} = \frac{\exp\big(e^{L}(\tilde S_{ij} - m_i)\big)}
                  {\sum_l \exp\big(e^{L}(\tilde S_{il} - m_i)\big)},
          \qquad m_i = \max_l \tilde S_{il},

so that neither the scores nor ``e^{L}`` are ever formed in float64 (the exponent is computed as
``-exp(L + log(m_i - S̃_ij))``). Then

* rescaled form (3.1):  ``ż_i = Σ_j A_ij V z_j − V z_i`` (``= Σ_j P_ij V (z_j − z_i)`` for softmax);
* token form (1.1):     ``ẋ_i = Σ_heads Σ_j A^h_ij V_h x_j`` (+ normalisation, + MLP);
* discrete layers:      ``x[k+1] = x[k] + h Σ_j P_ij[k] V x_j[k]`` and, with ``R = I + hV``,
  the rescaled recursion ``z[k+1] = z[k] + h Σ_j P_ij[k] R^{-1} V (z_j[k] − z_i[k])`` (Remark 3.4).

Every function exists for float64 (NumPy) and for python-flint ``arb_mat`` states; the choice
follows the backend (:mod:`verify.numerics`).

Examples
--------
>>> import numpy as np
>>> attention_weights(np.array([[0.0, -1.0], [-1.0, 0.0]]), log_scale=0.0).round(6)
array([[0.731059, 0.268941],
       [0.268941, 0.731059]])
>>> attention_weights(np.array([[0.0, -1.0], [-1.0, 0.0]]), log_scale=800.0)  # e^800 · gap
array([[1., 0.],
       [0., 1.]])
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
from flint import arb, arb_mat, ctx

from verify.exact.inputs import as_float_array
from verify.flow import compiled
from verify.flow.exponential import ValueExponential
from verify.model import Model
from verify.numerics import DIFFERENCE_ULPS, SUM_ULPS, Arb, Backend, ulps

__all__ = [
    "attention_weights",
    "attention_weights_arb",
    "softmax_terms_arb",
    "VectorField",
    "EigenRescaledField",
    "discrete_step_tokens",
    "discrete_step_rescaled",
]

Field = Callable[[object, object], object]


# ---------------------------------------------------------------------------------------------
# The kernel
# ---------------------------------------------------------------------------------------------
def attention_weights(scaled_scores: np.ndarray, log_scale: float = 0.0, kind: str = "softmax",
                      mask: np.ndarray | None = None) -> np.ndarray:
    """Attention weights from scores ``S = e^{log_scale} · scaled_scores`` (float64).

    Parameters
    ----------
    scaled_scores : ndarray, shape (n, n)
    log_scale : float
        ``L`` with ``S = e^L S̃``; any size (``e^L`` is never formed).
    kind : {"softmax", "hardmax", "unnormalised"}
        ``hardmax`` splits ties evenly; ``unnormalised`` is ``(1/n) e^{S_ij}`` (no row sums).
    mask : ndarray of bool, shape (n, n), optional
        Allowed pairs; masked-out weights are 0.

    Returns
    -------
    A : ndarray, shape (n, n)
    """
    S = np.array(scaled_scores, dtype=float)
    n = S.shape[0]
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    if kind == "unnormalised":
        with np.errstate(over="ignore"):
            weights = np.exp(np.exp(log_scale) * S) if log_scale < 709 else np.where(
                S > 0, np.inf, np.where(S == 0, 1.0, 0.0))
        return weights / n
    if kind == "hardmax":
        winners = (S.max(axis=1, keepdims=True) - S == 0).astype(float)
        return winners / winners.sum(axis=1, keepdims=True)
    return _softmax_in_place(S, log_scale)


_EXP_FLOOR = -600.0
# weights at or below it are set to 0 by the compiled kernel: e^{-600} with room for an ulp of
# difference between NumPy's exp and math.exp (the weights it drops besides are ~1e-261 too)
_TINY_WEIGHT = math.exp(_EXP_FLOOR + 1e-9)


def _softmax_in_place(S: np.ndarray, log_scale: float) -> np.ndarray:
    """The softmax weights of the scaled scores ``S`` (``-inf`` where masked out), written over
    ``S`` and returned: one pass per operation, no temporaries of size ``n²`` (the float64
    field kernel; :func:`attention_weights` calls it on its own copy).

    ``P_ij = w_ij / Σ_l w_il`` with ``w_ij = exp(-e^L (m_i − S̃_ij))``: the exponent is
    ``-e^L·gap`` while ``e^L`` is a float, else ``-exp(L + log gap)`` (0 where ``gap = 0``).
    Weights below ``e^{-600}`` (~1e-261) are set to 0: next to the row's largest weight 1 they
    are invisible, while exp near its underflow and products with subnormal numbers are 10-20x
    slower (measured for 128x128: exp 1 ms instead of 0.05 ms, P @ w 1.7 ms instead of 0.15).
    """
    top = S.max(axis=1, keepdims=True)
    np.subtract(top, S, out=S)  # the gap: ≥ 0, +inf where masked
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        if log_scale < 700:  # e^L is a float: one multiplication
            np.multiply(S, -np.exp(log_scale), out=S)
        else:  # -e^L·gap without forming e^L (-0 where gap = 0, whose weight is 1 all the same)
            np.log(S, out=S)
            np.add(S, log_scale, out=S)
            np.exp(S, out=S)
            np.negative(S, out=S)
    np.maximum(S, _EXP_FLOOR, out=S)
    below = S <= _EXP_FLOOR
    np.exp(S, out=S)
    S[below] = 0.0
    np.divide(S, S.sum(axis=1, keepdims=True), out=S)
    return S


_APPROX_ERROR = 2.0 ** -10  # largest error of the float64 scores the arb softmax decides on
# The arb softmax leaves out a row's shift c when |c| <= _UNSHIFTED (any exact shift cancels; it
# only keeps the exponents small): the weights e^{S̃_ij} then lie within e^{±(_UNSHIFTED + gap)}
# and lose at most log2(_UNSHIFTED) bits more than shifted ones. 2, not 1: on the sphere the
# largest score |x_i|² = 1 ± (the run's error) would otherwise be shifted at most evaluations.
_UNSHIFTED = 2.0
_ZERO, _ONE = arb(0), arb(1)
# Up to this log-scale L the arb softmax of the field reads its decisions off e^L times float64
# midpoints (_shared_pairs_arb, _row_weights_arb); beyond, they could overflow float64.
_SHARED_LOG_SCALE = 600.0


def attention_weights_arb(scaled_scores, log_scale, kind: str = "softmax",
                          mask: np.ndarray | None = None, symmetric: bool = False):
    """The same kernel in ball arithmetic: ``arb_mat`` scores, ``arb`` log-scale (``arb`` has
    unbounded exponents, so nothing overflows).

    A softmax weight whose exponent ``e^L (S̃_ij − m_i)`` lies below ``−2 (prec + 20) ln 2``
    (estimated in float64 as ``L + log(m_i − S̃_ij)``; the factor 2 absorbs that estimate's
    rounding) is set to 0 without evaluating it: it is smaller than ``2^{-(prec+20)}`` while the
    row's largest weight is 1, so it is below the working precision.

    ``symmetric``: the caller knows the exact scores are symmetric (``QᵀK`` symmetric, a
    symmetric mask or none); see :func:`softmax_terms_arb` for what it saves.
    """
    n = scaled_scores.nrows()
    if kind == "unnormalised":
        factor = _ONE if _unscaled(log_scale) else log_scale.exp()
        allowed = np.ones(n * n, dtype=bool) if mask is None else np.asarray(mask, bool).flat
        scaled = (scaled_scores * factor).entries()
        return arb_mat(n, n, [(v.exp() / n if ok else _ZERO)
                              for v, ok in zip(scaled, allowed, strict=True)])
    if kind == "hardmax":
        mids, allowed = _midpoints(scaled_scores, mask)
        winners = allowed & (mids == mids.max(axis=1, keepdims=True))
        shares = [_ONE / int(c) for c in winners.sum(axis=1)]
        return arb_mat(n, n, [shares[k // n] if w else _ZERO
                              for k, w in enumerate(winners.flat)])
    weights, needed, _ = softmax_terms_arb(scaled_scores, log_scale, mask, symmetric)
    return _normalised(weights, needed, n)


def _normalised(weights: list, needed: list[int], n: int):
    """``P_ij = w_ij / Σ_l w_il`` as an ``arb_mat`` (rows summed left to right)."""
    totals = [sum(weights[i * n:(i + 1) * n], _ZERO) for i in range(n)]
    for k in needed:
        weights[k] = weights[k] / totals[k // n]
    return arb_mat(n, n, weights)


def _unscaled(log_scale) -> bool:
    return isinstance(log_scale, (int, float)) and log_scale == 0


def _midpoints(scaled_scores, mask, entries=None) -> tuple[np.ndarray, np.ndarray]:
    """The scores' midpoints in float64 (``-inf`` where masked out) and the allowed pairs."""
    n = scaled_scores.nrows()
    entries = scaled_scores.entries() if entries is None else entries
    mids = np.fromiter(map(float, entries), dtype=float, count=n * n).reshape(n, n)
    allowed = np.ones((n, n), dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    mids[~allowed] = -np.inf
    return mids, allowed


@functools.lru_cache(maxsize=8)
def _pairs(n: int) -> tuple[list[int], list[int], list[tuple[int, int]]]:
    """The flat indices of the pairs ``i ≤ j`` of an ``n×n`` matrix, for every entry the
    position of its pair in that list, and the pairs as ``(i, j)``."""
    upper = np.flatnonzero(np.triu(np.ones((n, n), dtype=bool)))
    position = np.zeros(n * n, dtype=np.intp)
    position[upper] = np.arange(len(upper))
    position = np.maximum(position.reshape(n, n), position.reshape(n, n).T)
    return upper.tolist(), position.ravel().tolist(), [divmod(k, n) for k in upper.tolist()]


@functools.lru_cache(maxsize=8)
def _pair_layout(n: int) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """:func:`_pairs` with the positions as an ``n×n`` array: for every entry of an ``n×n``
    matrix the position of its pair ``i ≤ j`` in the list of pairs."""
    _, position, pairs = _pairs(n)
    return np.array(position, dtype=np.intp).reshape(n, n), pairs


def _cutoff(mids: np.ndarray, scale: float = 1.0) -> float:
    """The gap of exponents beyond which a softmax weight is below ``2^{-(prec+20)}`` of its
    row's largest, decided on float64 midpoints ``scale · mids`` (``-inf`` where masked out):
    ``(prec + 20) ln 2 + 1`` plus their rounding (:func:`~verify.numerics.ulps`,
    ``DIFFERENCE_ULPS`` of the largest finite one)."""
    finite = np.abs(mids[np.isfinite(mids)])
    return _cutoff_at(scale * float(finite.max()) if finite.size else 0.0)


def _cutoff_at(largest: float) -> float:
    """:func:`_cutoff` for float64 midpoints of largest size ``largest``."""
    return (ctx.prec + 20) * math.log(2) + 1.0 + float(ulps(DIFFERENCE_ULPS, largest))


def _shared_pairs_arb(scaled_scores, log_scale, mask: np.ndarray | None, unscaled: bool
                      ) -> tuple[list, list[tuple[int, int]], np.ndarray]:
    r"""The ``symmetric`` case of :func:`softmax_terms_arb`, pair by pair: ``(values, pairs,
    needed)``, ``values[p]`` the weight ``w_ij = w_ji`` of the pair ``pairs[p] = (i, j)``,
    ``i ≤ j`` (exact 0 where neither ``(i, j)`` nor ``(j, i)`` is needed), ``needed`` the
    ``n×n`` Boolean array of the weights needed.

    Only the ``n(n+1)/2`` pairs of ``S̃`` are read, as exponents ``E_ij = e^L (S̃_ij − c)`` with
    ``c`` the largest diagonal midpoint (an exact number; ``|E| ≤ 2 max|S|`` as in
    :func:`softmax_terms_arb`, so the same rounding). Their midpoints decide in float64, in units
    of the exponent: a weight is needed unless ``max_l E_il − E_ij ≥ (prec + 20) ln 2 + 1 + δ``,
    ``δ`` the rounding of those float64 midpoints (:func:`~verify.numerics.ulps`,
    ``DIFFERENCE_ULPS`` of ``max|E|``); a weight left out is then below ``2^{-(prec+20)}`` of
    its row's largest, as the general route's (whose estimate ``L + log(gap)`` needs a factor 2
    on the cutoff instead). One ball ``exp`` per needed pair. Reading ``n(n+1)/2`` balls instead
    of ``n²``, and fewer exponentials of weights far below the working precision, are what this
    saves. Without a mask, when the largest and smallest exponent of all are less than the cutoff
    apart, no row has a gap that reaches it: every weight is needed, decided without the
    row-by-row comparisons (the same decisions, at the cost of a ``max`` and a ``min``)."""
    n = scaled_scores.nrows()
    position, pairs = _pair_layout(n)
    c = arb(max(float(scaled_scores[i, i]) for i in range(n)))   # float(x): x's midpoint
    if unscaled:
        exponents = [scaled_scores[i, j] - c for i, j in pairs]
    else:
        factor = log_scale.exp()
        exponents = [(scaled_scores[i, j] - c) * factor for i, j in pairs]
    floats = list(map(float, exponents))
    cutoff = needed = None
    if mask is None and math.isfinite(sum(floats)):  # then _cutoff(mids), from the extremes
        top, low = max(floats), min(floats)
        cutoff = _cutoff_at(max(top, -low))
        if top - low < cutoff:  # no gap reaches the cutoff, so no row's does: all needed
            needed = np.ones((n, n), dtype=bool)
    if needed is None:
        mids = np.array(floats)[position]
        if mask is not None:
            mids[~np.asarray(mask, dtype=bool)] = -np.inf
        cutoff = _cutoff(mids) if cutoff is None else cutoff
        needed = mids.max(axis=1, keepdims=True) - mids < cutoff   # False where masked out
    if needed.all():
        return [x.exp() for x in exponents], pairs, needed
    pair_needed = np.zeros(len(pairs), dtype=bool)
    pair_needed[position[needed]] = True
    return [x.exp() if ok else _ZERO for x, ok in zip(exponents, pair_needed.tolist(),
                                                        strict=True)], pairs, needed


def _shared_terms_arb(scaled_scores, log_scale, mask: np.ndarray | None, unscaled: bool
                      ) -> tuple[list, list[int], bool]:
    """:func:`_shared_pairs_arb` as :func:`softmax_terms_arb`'s row-major weights."""
    values, pairs, needed = _shared_pairs_arb(scaled_scores, log_scale, mask, unscaled)
    position, _ = _pair_layout(len(needed))
    flat = np.where(needed, position, -1).ravel().tolist()
    return [values[p] if p >= 0 else _ZERO for p in flat], np.flatnonzero(needed).tolist(), True


def _midpoints_decide(log_scale, approx) -> bool:
    """Whether :func:`_shared_pairs_arb` and :func:`_row_weights_arb` decide: no float64 scores
    given (``approx``), and ``L`` small enough for ``e^L`` times the scores' midpoints to stay
    within the float64 range (:data:`_SHARED_LOG_SCALE`)."""
    return approx is None and (_unscaled(log_scale)
                               or float(log_scale.mid()) <= _SHARED_LOG_SCALE)


def _row_weights_arb(scaled_scores, log_scale, mask: np.ndarray | None, unscaled: bool):
    r"""The softmax weights of :func:`softmax_terms_arb`'s general route as an ``arb_mat``
    ``w`` (``P_ij = w_ij / Σ_l w_il``), each row shifted by its largest midpoint ``c_i`` (an
    exact number): ``w_ij = e^{e^L (S̃_ij − c_i)}``, written into the matrix where needed (0
    elsewhere; no row-major list of ``n²`` balls). A weight is needed unless
    ``e^L (c_i − S̃_ij) ≥ (prec + 20) ln 2 + 1 + δ`` in float64, ``δ`` the rounding of that
    estimate (:func:`~verify.numerics.ulps`, ``DIFFERENCE_ULPS`` of ``e^L max|S̃|``, and of
    ``e^L`` itself): a weight left out is below ``2^{-(prec+20)}`` of its row's largest."""
    n = scaled_scores.nrows()
    entries = scaled_scores.entries()
    mids = np.fromiter(map(float, entries), dtype=float, count=n * n).reshape(n, n)
    if mask is not None:
        mids[~np.asarray(mask, dtype=bool)] = -np.inf
    tops = mids.max(axis=1, keepdims=True)
    scale = 1.0 if unscaled else math.exp(float(log_scale.mid()))
    gap = (tops - mids) * scale                                 # +inf where masked out
    needed = np.flatnonzero(gap < _cutoff(mids, scale) * (1 + ulps(DIFFERENCE_ULPS))).tolist()
    shifts = [arb(c) for c in tops.ravel().tolist()]
    factor = None if unscaled else log_scale.exp()
    W = arb_mat(n, n)
    for k in needed:
        i = k // n
        exponent = entries[k] - shifts[i]
        W[i, k - i * n] = (exponent if factor is None else exponent * factor).exp()
    return W


def _weight_matrix_arb(scaled_scores, log_scale, mask: np.ndarray | None, symmetric: bool,
                       approx: np.ndarray | None):
    """The softmax weights ``w`` before their row normalisation as an ``arb_mat``, from pairs
    (:func:`_shared_pairs_arb`: both entries of every pair evaluated — a weight below the
    working precision of its row is kept where the other row needed it; it is exact) or rows
    (:func:`_row_weights_arb`); ``None`` where the float64 midpoints of the exponents could
    overflow (``L`` beyond :data:`_SHARED_LOG_SCALE`) or float64 scores decide
    (``approx``): then :func:`softmax_terms_arb`."""
    if not _midpoints_decide(log_scale, approx):
        return None
    unscaled = _unscaled(log_scale)
    if not symmetric:
        return _row_weights_arb(scaled_scores, log_scale, mask, unscaled)
    n = scaled_scores.nrows()
    values, pairs, _ = _shared_pairs_arb(scaled_scores, log_scale, mask, unscaled)
    W = arb_mat(n, n)
    for (i, j), value in zip(pairs, values, strict=True):
        W[i, j] = W[j, i] = value
    return W


def softmax_terms_arb(scaled_scores, log_scale, mask: np.ndarray | None = None,
                      symmetric: bool = False, approx: np.ndarray | None = None,
                      ) -> tuple[list, list[int], bool]:
    r"""The softmax weights before their row normalisation, in balls: ``(w, needed, shared)``
    with ``P_ij = w_ij / Σ_l w_il`` (``w`` row-major, ``n²`` entries, exact 0 where not needed;
    ``needed``: the flat indices evaluated).

    Each row is shifted by its largest score: ``w_ij = e^{e^L (S̃_ij − m_i)}``, one ball ``exp``
    per needed weight. The decisions (which entry leads its row, which weights are needed) are
    read off the midpoints in float64, vectorised.

    ``symmetric`` (the caller knows the exact scores are symmetric): every row is shifted by one
    exact number ``c`` instead — the largest midpoint of all, or of the diagonal
    (:func:`_shared_pairs_arb`) — (``shared`` is then True):
    ``w_ij = e^{e^L (S̃_ij − c)} = w_ji``, so the exponential of the pair ``(i, j)`` serves both
    rows — one ball ``exp`` per pair instead of two. The ball of ``S̃_ij`` contains the true
    ``S̃_ij = S̃_ji``, and any shift cancels in the ratio (a row's weights may all be tiny: ``arb``
    has unbounded exponents), so every weight still contains the truth. Its rounding: the
    exponent ``e^L (S̃_ij − c)`` has ``|·| ≤ 2 max|S|`` (``S = e^L S̃``), as ``e^L (S̃_ij − m_i)``
    has, so its absolute rounding is at most a few ``2^{-prec} max|S|`` — the rounding the scores
    ``S̃_ij`` themselves already carry into every weight, and what the working precision's
    ``log₂ max|S|`` bits (:func:`~verify.flow.precision_policy.working_bits`) pay for. (This
    sharing was once kept to rows whose largest midpoints lie within ``e^{-L}`` of ``c``; the
    rescaled runs of the paper suite's symmetric ``QᵀK`` then paid ``n²`` exponentials instead
    of ``n(n+1)/2`` at almost every evaluation.)

    ``approx`` (only where ``L = 0``, the token form): float64 values of the scores within
    ``2^{-10}`` of them (the caller bounds the error), read instead of the midpoints for the
    decisions. A decision only picks the shift (any exact number cancels) or drops a weight
    whose exponent is below ``−2 (prec + 20) ln 2`` up to that error — still far below
    ``2^{-(prec+20)}`` —, so the weights are what the midpoints would give up to rounding. Then
    the balls are read one by one where needed, and a shift ``|c| ≤ 2`` is left out (``c = 0``:
    the weights ``e^{S̃_ij}`` stay within ``e^{±(2 + gap)}``).
    """
    n = scaled_scores.nrows()
    unscaled = _unscaled(log_scale)
    log_cutoff = math.log(2 * (ctx.prec + 20) * math.log(2))
    if approx is not None and unscaled and symmetric and mask is None:
        tops = approx.max(axis=1).tolist()     # the decisions below when they are trivial:
        top = max(tops)                        # every weight needed, one shift for all rows
        if top - min(tops) <= 1.0 and top - float(approx.min()) < math.exp(log_cutoff):
            _, position, pairs = _pairs(n)
            exponents = [scaled_scores[i, j] for i, j in pairs]
            if abs(top) > _UNSHIFTED:
                shift = arb(top)
                exponents = [x - shift for x in exponents]
            values = [x.exp() for x in exponents]
            return [values[p] for p in position], list(range(n * n)), True
    if symmetric and _midpoints_decide(log_scale, approx):
        return _shared_terms_arb(scaled_scores, log_scale, mask, unscaled)
    factor = _ONE if unscaled else log_scale.exp()
    entries = None
    if approx is not None and unscaled:
        mids = np.array(approx, dtype=float)
        allowed = np.ones((n, n), dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
        mids[~allowed] = -np.inf
    else:
        entries = scaled_scores.entries()
        mids, allowed = _midpoints(scaled_scores, mask, entries)
    best = np.argmax(mids, axis=1)             # the first largest allowed entry of each row
    tops = mids[np.arange(n), best]
    gap = tops[:, None] - mids                 # ≥ 0, +inf where masked out
    log_factor = 0.0 if unscaled else float(log_scale.mid())
    if unscaled:                               # is the weight above the working precision?
        needed = allowed & (gap < math.exp(log_cutoff))
    else:
        with np.errstate(divide="ignore"):
            needed = allowed & ((gap <= 0) | (log_factor + np.log(gap) < log_cutoff))
    evaluated = np.flatnonzero(needed).tolist()  # row by row, left to right
    if symmetric:
        top = int(np.argmax(tops))
        upper, position, pairs = _pairs(n)
        if len(evaluated) < n * n:                         # a mask, or weights below precision
            pairs_needed = needed | needed.T
            upper = [k for k in upper if pairs_needed.flat[k]]
            pairs = [divmod(k, n) for k in upper]
            index = np.full(n * n, len(upper), dtype=np.intp)
            index[upper] = np.arange(len(upper))
            index = np.minimum(index.reshape(n, n), index.reshape(n, n).T)
            index[~needed] = len(upper)
            position = index.ravel().tolist()
        if entries is None:                                # exact: cancels in every row
            shift = None if abs(float(tops[top])) <= _UNSHIFTED else arb(float(tops[top]))
            exponents = [scaled_scores[i, j] for i, j in pairs]
            if shift is not None:
                exponents = [x - shift for x in exponents]
        else:
            shift = entries[top * n + int(best[top])].mid()
            exponents = [entries[k] - shift for k in upper]
        if not unscaled:
            exponents = [x * factor for x in exponents]
        values = [x.exp() for x in exponents]
        values.append(_ZERO)                               # where a weight is not needed
        return [values[p] for p in position], evaluated, True
    if entries is None:
        entries = scaled_scores.entries()
    weights = [_ZERO] * (n * n)
    best = best.tolist()
    for k in evaluated:
        i = k // n
        exponent = entries[k] - entries[i * n + best[i]]       # × e^L: e^L (S̃_ij − m_i) ≤ 0
        weights[k] = (exponent if unscaled else exponent * factor).exp()
    return weights, evaluated, False


# ---------------------------------------------------------------------------------------------
# Helpers that differ between float64 arrays and arb matrices
# ---------------------------------------------------------------------------------------------
def _activation_float(name: str, y: np.ndarray) -> np.ndarray:
    if name == "relu":
        return np.maximum(y, 0.0)
    if name == "tanh":
        return np.tanh(y)
    return y


def _activation_arb(name: str, y):
    if name == "identity":
        return y
    rows = []
    for i in range(y.nrows()):
        row = []
        for j in range(y.ncols()):
            v = y[i, j]
            row.append(v.tanh() if name == "tanh" else (v if float(v.mid()) > 0 else arb(0)))
        rows.append(row)
    return arb_mat(rows)


def _row_normalise_arb(X):
    """Rows divided by their Euclidean norm (pre-LN)."""
    rows = []
    for i in range(X.nrows()):
        row = [X[i, j] for j in range(X.ncols())]
        norm = sum((v * v for v in row), 0 * row[0]).sqrt()
        rows.append([v / norm for v in row])
    return arb_mat(rows)


def _tangent_arb(X, A, totals: list | None = None, norms: list | None = None):
    """Velocity minus its radial part, ``a_i − <a_i, x_i> x_i / |x_i|²`` (post-LN sphere), for
    the ``n×d`` ``arb_mat`` states ``X`` and velocities ``A``; with row ``i`` divided by
    ``totals[i]`` if given (a row normalisation: it commutes with the projection); ``norms``:
    the ``|x_i|²`` if at hand. Written as ``D_r A − D_c X`` with the diagonal matrices
    ``D_r = diag(1/r_i)``, ``D_c = diag(<a_i, x_i> / (|x_i|² r_i))``: the products and the
    difference run in FLINT, only ``n`` coefficients in Python."""
    n = X.nrows()
    dots = A * X.transpose()                 # <a_i, x_i> on the diagonal
    if norms is None:
        squares = X * X.transpose()
        norms = [squares[i, i] for i in range(n)]
    coef, rows = arb_mat(n, n), arb_mat(n, n)
    for i in range(n):
        c = dots[i, i] / norms[i]
        if totals is None:
            coef[i, i] = c
        else:
            inverse = 1 / totals[i]
            coef[i, i], rows[i, i] = c * inverse, inverse
    return (A if totals is None else rows * A) - coef * X


def _is_identity(M: np.ndarray) -> bool:
    return bool(np.all(M == np.eye(len(M), dtype=int)))


# ---------------------------------------------------------------------------------------------
# Vector fields
# ---------------------------------------------------------------------------------------------
class VectorField:
    """The right-hand side of a model's continuous dynamics in a backend's arithmetic.

    ``field(t, state)`` returns ``d state / dt``; the state is ``z`` for ``form="z"`` and ``x``
    otherwise (``n×d``: ndarray for :class:`~verify.numerics.Float64`, ``arb_mat`` for
    :class:`~verify.numerics.Arb`). :meth:`scores` and :meth:`attention` give the quantities a
    trajectory records at its checkpoints.

    Parameters
    ----------
    model : Model
    n : int
        Number of tokens (for the mask).
    backend : Backend

    Examples
    --------
    >>> from verify.model import Model
    >>> from verify.numerics import Float64
    >>> f = VectorField(Model(V=[[1]]), 1, Float64())
    >>> f(0.0, np.array([[2.0]]))          # one token: ż = V(z − z) = 0
    array([[0.]])
    """

    def __init__(self, model: Model, n: int, backend: Backend) -> None:
        self.model = model
        self.n = n
        self.backend = backend
        self.mask = model.mask_for(n)
        self.arb = isinstance(backend, Arb)
        self.rescaled = model.rescaled
        self.exponential = ValueExponential(model.V) if self.rescaled else None
        self._eigen_scores: dict = {}  # head -> P_Rᵀ B P_R (arb, rescaled form)
        self.nfev = 0
        # exactly symmetric scores (QᵀK symmetric, a symmetric mask): the arb softmax shares
        # the exponential of a pair between its two rows
        symmetric_mask = self.mask is None or bool(np.array_equal(self.mask, self.mask.T))
        self._symmetric = [symmetric_mask and bool(np.all(B == B.T))
                           for B in (h.B for h in model.heads)] if self.arb else None
        # one softmax head on the sphere, tokens as they are (no MLP, no pre-LN): the row
        # normalisation and the tangent projection in one pass (_sphere_softmax_arb); with
        # V = I or βQᵀK = I exactly their products are left out (|x_i|² is then S_ii)
        self._sphere_softmax = (self.arb and model.on_sphere and not self.rescaled
                                and model.single_head and model.softmax and not model.has_mlp
                                and not model.pre_ln)
        if self._sphere_softmax:
            head = model.heads[0]
            self._identity = (_is_identity(head.V), _is_identity(model.beta * head.B))
        if self.arb:
            # βQᵀK once per head, exact (β = 1 multiplies no Fractions: d² of them cost ~0.1 s
            # at d = 128), and in float64 for the softmax's decisions
            exact_B = [h.B if model.beta == 1 else model.beta * h.B for h in model.heads]
            self._float_B = [as_float_array(B) for B in exact_B]
            self._float_B_size = [float(np.abs(B).sum()) for B in self._float_B]
            with backend.working_precision():
                self._heads = [(backend.from_exact(h.V).transpose(), backend.from_exact(B))
                               for h, B in zip(model.heads, exact_B, strict=True)]
                self._ones = arb_mat(n, 1, [1] * n)
                if model.has_mlp:
                    self._mlp = (backend.from_exact(model.mlp.W).transpose(),
                                 None if model.mlp.bias is None
                                 else backend.from_exact(np.array([model.mlp.bias])))
        else:
            self._heads = [(Vf.T.copy(), Bf) for Vf, Bf in model.float_heads()]
            if model.has_mlp:
                self._mlp = (as_float_array(model.mlp.W).T.copy(),
                             None if model.mlp.bias is None else as_float_array(model.mlp.bias))

    # -- scores and attention ----------------------------------------------------------------
    def scores(self, t, state, head: int = 0):
        """``(S̃, L)`` with the scores ``S = e^L S̃`` at time ``t`` for ``state``."""
        _, B = self._heads[head]
        if self.rescaled:
            if self.arb:
                return self._scores_arb(t, state, head)
            E, growth = self.exponential.scaled_float(float(t))
            Y = state @ E.T
            return Y @ B @ Y.T, 2.0 * growth
        X = self._attention_input(state)
        if self.arb:
            return X * B * X.transpose(), 0
        return X @ B @ X.T, 0.0

    def _scores_arb(self, t, state, head: int):
        """Rescaled scores in arb. With ``V = P_R Λ_R P_R^{-1}`` real (see
        :meth:`ValueExponential.eigen_rows_arb`), ``S̃ = U B_R Uᵀ`` from the rows ``U`` in the
        eigen-basis and ``B_R = P_Rᵀ B P_R`` (computed once): one ``n×d×d`` product fewer than
        ``Y B Yᵀ`` with ``Y = U P_Rᵀ``."""
        _, B = self._heads[head]
        bits = self.backend.bits
        rows = self.exponential.eigen_rows_arb(t, state, bits)
        if rows is None:
            Y, growth = self.exponential.scaled_rows_arb(t, state, bits)
            return Y * B * Y.transpose(), 2 * growth
        U, P_t, growth = rows
        if head not in self._eigen_scores:
            self._eigen_scores[head] = P_t * B * P_t.transpose()
        return U * self._eigen_scores[head] * U.transpose(), 2 * growth

    def attention(self, t, state, head: int = 0):
        """The attention matrix ``A`` (``P`` for softmax) at time ``t``."""
        scaled, log_scale = self.scores(t, state, head)
        if self.arb:
            return attention_weights_arb(scaled, log_scale, self.model.attention, self.mask,
                                         self._symmetric[head])
        return attention_weights(scaled, log_scale, self.model.attention, self.mask)

    def _attend(self, t, state, Y, head: int = 0):
        """``A Y`` for the attention matrix ``A`` of ``head`` at ``t``. In arb the softmax weights
        come as a matrix ``w`` before their row normalisation (:func:`_weight_matrix_arb`, else
        :func:`softmax_terms_arb`), which is applied to the ``n×d`` product by one diagonal
        product: ``(w Y)_i / Σ_l w_il``."""
        if not self.arb:
            return self.attention(t, state, head) @ Y
        if not self.model.softmax:
            return self.attention(t, state, head) * Y
        scaled, log_scale = self.scores(t, state, head)
        n = scaled.nrows()
        approx = self._float_scores(state, head)
        W = _weight_matrix_arb(scaled, log_scale, self.mask, self._symmetric[head], approx)
        if W is None:
            weights, needed, shared = softmax_terms_arb(scaled, log_scale, self.mask,
                                                        self._symmetric[head], approx)
            if not shared:
                return _normalised(weights, needed, n) * Y
            W = arb_mat(n, n, weights)
        totals = (W * self._ones).entries()
        scale = arb_mat(n, n)
        for i in range(n):
            scale[i, i] = 1 / totals[i]
        return scale * (W * Y)

    def _float_scores(self, state, head: int, entries: list | None = None):
        """The token form's scores in float64 for the softmax's decisions
        (:func:`softmax_terms_arb`), or ``None`` (the decisions then read the balls' midpoints):
        for the rescaled form, and where their rounding error could exceed ``2^{-10}`` (large
        tokens); ``entries``: those of ``state``, if at hand."""
        if self.rescaled:
            return None
        n, d = state.nrows(), state.ncols()
        entries = state.entries() if entries is None else entries
        X = np.fromiter(map(float, entries), dtype=float, count=n * d).reshape(n, d)
        X = self._attention_input(X)                  # pre-LN: x/|x| in float64
        B = self._float_B[head]
        # |fl(X B Xᵀ) − X B Xᵀ| ≤ (2d + 2) u max|x|² Σ|B| = (d + 1) ulps of max|x|² Σ|B|
        # (u = ε/2, max|x|² ≤ Σ x²): far below the ~80 units of exponent by which the decisions
        # may err, or the midpoints are read
        scale = float(np.vdot(X, X)) * self._float_B_size[head]
        if ulps(SUM_ULPS * (d + 1), scale) > _APPROX_ERROR:
            return None
        return X @ B @ X.T

    def _sphere_softmax_arb(self, X):
        """The field of one softmax head on the sphere in arb: with the weights ``w`` before
        their row normalisation (:func:`softmax_terms_arb`), ``a = w X Vᵀ`` and ``r = w 1``,
        ``ẋ_i = (a_i − <a_i, x_i> x_i / |x_i|²) / r_i``."""
        Vt, B = self._heads[0]
        identity_V, identity_B = self._identity
        xs = X.entries()
        scaled = X * X.transpose() if identity_B else X * B * X.transpose()
        weights, _, _ = softmax_terms_arb(scaled, 0, self.mask, self._symmetric[0],
                                          self._float_scores(X, 0, xs))
        n = X.nrows()
        W = arb_mat(n, n, weights)
        return _tangent_arb(X, W * (X if identity_V else X * Vt), (W * self._ones).entries(),
                            [scaled[i, i] for i in range(n)] if identity_B else None)

    def _attention_input(self, X):
        if not self.model.pre_ln:
            return X
        if not isinstance(X, np.ndarray):
            return _row_normalise_arb(X)
        return X / np.linalg.norm(X, axis=1, keepdims=True)

    # -- the field ---------------------------------------------------------------------------
    def __call__(self, t, state):
        self.nfev += 1
        if self.arb:
            # Ball radii are dropped on entry: an integrator's stages combine field values, and
            # the radii would compound through e^L-scaled exponents into meaningless (even NaN)
            # balls. The arithmetic stays at the working precision; accuracy is measured by
            # re-running at a higher one (see verify.flow.simulate).
            state = state.mid()
            if self._sphere_softmax:
                return self._sphere_softmax_arb(state)
        if self.rescaled:
            Vt, _ = self._heads[0]
            W = state * Vt if self.arb else state @ Vt
            # Σ_j A_ij V z_j − V z_i  (= Σ_j P_ij V (z_j − z_i) when rows of A sum to 1)
            return self._mlp_apply(self._attend(t, state, W) - W)
        values = self._attention_input(state)
        total = None
        for index, (Vt, _) in enumerate(self._heads):
            term = self._attend(t, state, values * Vt if self.arb else values @ Vt, index)
            total = term if total is None else total + term
        total = self._mlp_apply(total)
        if self.model.on_sphere:
            if self.arb:
                return _tangent_arb(state, total)
            radial = np.sum(total * state, axis=1, keepdims=True) / np.sum(
                state * state, axis=1, keepdims=True)
            return total - radial * state
        return total

    def _mlp_apply(self, y):
        if not self.model.has_mlp:
            return y
        Wt, bias = self._mlp
        name = self.model.mlp.activation
        if self.arb:
            out = _activation_arb(name, y) * Wt
            if bias is not None:
                out = out + arb_mat([[bias[0, j] for j in range(bias.ncols())]] * out.nrows())
            return out
        out = _activation_float(name, y) @ Wt
        return out if bias is None else out + bias


class EigenRescaledField:
    r"""The rescaled field (3.1) in eigen-coordinates of a ``V = P Λ P^{-1}`` diagonalisable over
    ``R`` (float64): ``P = Φ`` orthogonal when ``V`` is symmetric, else the eigenvectors of
    ``numpy.linalg.eig`` when every eigenvalue is real and ``cond(P) ≤`` :data:`MAX_CONDITION`.

    With ``w_i = P^{-1} z_i`` (rows: ``w = z P^{-T}``) and ``s_k(t) = e^{(λ_k − μ) t}``,

    .. math:: \tilde S_{ij} = \langle s \circ w_i,\; B_P\, (s \circ w_j)\rangle,\qquad
              \dot w = (A w - w)\,Λ,\qquad B_P = Pᵀ B P,

    which costs two ``n×n×d`` products (one when ``B_P = I``) and one ``n×d×d`` product per call
    instead of rebuilding ``Ẽ(t)`` (a ``d³`` product) and mapping every token through it.
    ``verify.flow.simulate`` integrates ``w`` with it and maps back ``z = w Pᵀ`` at checkpoints
    (:meth:`to_z`; :meth:`to_w` the other way).

    >>> from verify.model import Model
    >>> from verify.numerics import Float64
    >>> z = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, -0.5]])
    >>> for V in ([[2, 1], [1, 2]], [[2, 1], [0, -1]]):      # symmetric; triangular, real λ
    ...     f, g = EigenRescaledField(Model(V=V), 3), VectorField(Model(V=V), 3, Float64())
    ...     print(f.kind, bool(np.allclose(f.to_z(f(0.3, f.to_w(z))), g(0.3, z))))
    symmetric True
    diagonalisable True
    """

    #: Largest condition number of ``P`` accepted for a non-symmetric ``V``. Round-off in the
    #: field grows like ``cond(P)²·ε`` through the change of basis (``|w|`` up to ``cond·|z|``,
    #: then cancellation in ``ż = ẇ Pᵀ``): the arb spot check of the error estimate measured a
    #: relative field error 7e-10 at ``cond = 5.7e3`` (``n = d = 64``), above ``rtol = 1e-10``;
    #: at 100 it stays near ``1e-12``.
    MAX_CONDITION = 100.0

    def __init__(self, model: Model, n: int, heads: list | None = None) -> None:
        Vf, Bf = (heads or model.float_heads())[0]  # heads: (V, βQᵀK) in float64, if at hand
        self.model, self.n, self.mask, self.nfev = model, n, model.mask_for(n), 0
        decomposition = _real_eigen_decomposition(model.V, Vf)
        if decomposition is None:
            raise ValueError("EigenRescaledField needs V diagonalisable over R (see applies).")
        self.kind, lam, P, P_inv = decomposition
        self.lam, self.mu = lam, float(lam.max())
        self._to_w, self._to_z = P_inv.T.copy(), P.T.copy()
        B = P.T @ Bf @ P
        self.B = None if self.kind == "symmetric" and np.array_equal(Bf, np.eye(len(lam))) \
            else B
        self._buffer = None  # the n×n scores, overwritten by their softmax weights, per call
        # the optional compiled softmax (verify.flow.compiled: Numba, large systems only)
        self._kernel = compiled.kernel(n, len(lam)) if model.softmax else None

    @staticmethod
    def applies(model: Model) -> bool:
        """One head without MLP or normalisation in form ``z``, with ``V`` exactly symmetric or
        diagonalisable over ``R`` with a well-conditioned eigenvector matrix."""
        if not model.rescaled or not model.single_head or model.has_mlp:
            return False
        return _real_eigen_decomposition(model.V, model.float_heads()[0][0]) is not None

    def to_w(self, z: np.ndarray) -> np.ndarray:
        """Eigen-coordinates ``w = z P^{-T}`` of the rows of ``z``."""
        return z @ self._to_w

    def to_z(self, w: np.ndarray) -> np.ndarray:
        """Back: ``z = w Pᵀ`` (also maps a derivative ``ẇ`` to ``ż``)."""
        return w @ self._to_z

    def scores(self, t: float, w: np.ndarray, out: np.ndarray | None = None
               ) -> tuple[np.ndarray, float]:
        """``(S̃, L)`` from the eigen-coordinates ``w`` (see :meth:`VectorField.scores`);
        ``S̃`` written into ``out`` if given."""
        Ys = w * np.exp((self.lam - self.mu) * t)
        left = Ys if self.B is None else Ys @ self.B
        return np.matmul(left, Ys.T, out=out), 2.0 * self.mu * t

    def attention(self, t: float, w: np.ndarray) -> np.ndarray:
        S, L = self.scores(t, w)
        return attention_weights(S, L, self.model.attention, self.mask)

    def __call__(self, t, w: np.ndarray) -> np.ndarray:
        self.nfev += 1
        t = float(t)
        if not self.model.softmax:
            return (self.attention(t, w) @ w - w) * self.lam
        # the softmax kernel in place in one preallocated n×n buffer (no n² temporaries)
        if self._buffer is None or self._buffer.shape[0] != w.shape[0]:
            self._buffer = np.empty((w.shape[0], w.shape[0]))
        S, L = self.scores(t, w, out=self._buffer)
        if self.mask is not None:
            np.copyto(S, -np.inf, where=~self.mask)
        if self._kernel is not None:
            return self._compiled_tail(S, L, w)
        out = _softmax_in_place(S, L) @ w
        out -= w
        out *= self.lam
        return out

    def _compiled_tail(self, S: np.ndarray, L: float, w: np.ndarray) -> np.ndarray:
        """``(P w − w) Λ`` from the scores ``S`` (overwritten) with the compiled kernel
        (:mod:`verify.flow.compiled`): the same weights as :func:`_softmax_in_place`, their row
        normalisation applied to ``W w``."""
        exponents, row_sums, finish = self._kernel
        exponents(S, L, _EXP_FLOOR)
        np.exp(S, out=S)  # NumPy's vectorised exp (Numba's is scalar)
        sums = np.empty(S.shape[0])
        row_sums(S, _TINY_WEIGHT, sums)
        out = S @ w
        finish(out, sums, w, self.lam)
        return out


def _real_eigen_decomposition(V_exact: np.ndarray, Vf: np.ndarray):
    """``(kind, λ, P, P^{-1})`` with ``Vf = P diag(λ) P^{-1}`` in float64: ``eigh`` for an
    exactly symmetric ``V``; ``eig`` when every eigenvalue is real and ``cond(P)`` is at most
    :attr:`EigenRescaledField.MAX_CONDITION`; else ``None``."""
    if np.all(V_exact == V_exact.T):
        lam, Phi = np.linalg.eigh(Vf)
        return "symmetric", lam, Phi, Phi.T
    lam, P = np.linalg.eig(Vf)
    if np.iscomplexobj(lam) or not np.all(np.isfinite(P)) \
            or np.linalg.cond(P) > EigenRescaledField.MAX_CONDITION:
        return None
    return "diagonalisable", lam, P, np.linalg.inv(P)


# ---------------------------------------------------------------------------------------------
# Discrete layers (exact-friendly: any arithmetic with +, *, @ on object arrays)
# ---------------------------------------------------------------------------------------------
def discrete_step_tokens(x: np.ndarray, P: np.ndarray, V: np.ndarray, h) -> np.ndarray:
    """One residual layer ``x_i[k+1] = x_i[k] + h Σ_j P_ij[k] V x_j[k]``.

    Works on float arrays and on object arrays of Fractions (exact), with ``P`` given.

    >>> from fractions import Fraction as F
    >>> x = np.array([[F(1)], [F(3)]], dtype=object)
    >>> P = np.array([[F(1, 2)] * 2] * 2, dtype=object)
    >>> discrete_step_tokens(x, P, np.array([[F(1)]], dtype=object), F(1, 10))
    array([[Fraction(6, 5)],
           [Fraction(16, 5)]], dtype=object)
    """
    return x + h * P.dot(x.dot(V.T))


def discrete_step_rescaled(z: np.ndarray, P: np.ndarray, V: np.ndarray, h,
                           R_inv: np.ndarray) -> np.ndarray:
    """One rescaled layer ``z_i[k+1] = z_i[k] + h Σ_j P_ij[k] R^{-1} V (z_j[k] − z_i[k])``.

    ``R = I + hV`` and ``P[k]`` is the attention of ``x[k] = R^k z[k]`` (Remark 3.4); rows of
    ``P`` must sum to 1 for this identity.
    """
    M = R_inv.dot(V)
    W = z.dot(M.T)
    return z + h * (P.dot(W) - W)
