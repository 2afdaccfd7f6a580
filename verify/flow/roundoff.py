r"""Round-off a float64 reference run cannot see: a higher-precision spot check of the field.

The error estimate of :func:`verify.flow.simulate.simulate` is the distance to an independent re-run
at a tighter tolerance. For large systems (``n²d`` above
:data:`~verify.flow.precision_policy.ARB_REFERENCE_LIMIT`) that re-run is float64 too, so it is
blind to whatever both runs get wrong in the same way: the round-off of the field evaluation itself
(float64 products of ``n×n×d`` sums, softmax weights, and — for symmetric ``V`` — the float64
eigen-decomposition both runs integrate in). This module measures it directly: at a few
checkpoints ``t_k`` of the integrated part of the run it evaluates the field at the run's own
state ``z(t_k)`` twice, as the float64 run does (:func:`float64_field`) and in ``arb`` ball
arithmetic at :func:`~verify.flow.precision_policy.working_bits` from the exact model data, and
records

.. math:: δ_k = \max_{i,a} \big|f^{\,64}(t_k, z(t_k)) - f(t_k, z(t_k))\big|_{ia}.

To first order an error ``δ`` in the field accumulates in the state as ``∫ δ(s) ds`` (no
amplification is modelled: the integrated part is where the attention is still soft and the
field contracts or grows slowly; after a certified hardmax switch the state follows the closed
form and the estimate is carried as a constant). :func:`accumulated` gives that integral,
with ``δ`` piecewise constant at the larger of neighbouring samples, and ``simulate`` adds it to
every entry of the error estimate, and (:func:`score_perturbation`) its effect on the scaled
scores and on the margins the judges read. The same spot check compares the scaled scores
themselves, float64 against ``arb`` at the run's state (``score_max_abs``): both float64 runs
form them with the same float64 exponential ``Ẽ(t)`` and the same products, an error neither
sees (measured by ``benchmarks/error_coverage.py``: up to 13 times the estimate without it).

Examples
--------
>>> import numpy as np
>>> from verify.model import Instance, Model
>>> inst = Instance(Model(V=[[2, 1], [1, 2]]), [[1, 0], [0, 1], ["1/2", "-1/2"]])
>>> z = inst.x0_float()
>>> check = spot_check(inst, [0.0], [z])
>>> check["max_abs"][0] < 1e-15                       # float64 field vs arb at 0: round-off
True
>>> [float(f"{v:.3g}") for v in accumulated([0.0, 1.0, 2.0], [1e-16, 3e-16, 2e-16],
...                                           [0.0, 2.0, 3.0], until=2.5)]
[0.0, 6e-16, 7e-16]
"""

from __future__ import annotations

import numpy as np

from verify.flow.continuation import _norm_bound
from verify.flow.exponential import ValueExponential
from verify.flow.fields import EigenRescaledField, VectorField
from verify.flow.precision_policy import working_bits
from verify.model import Instance
from verify.numerics import Arb, Float64

__all__ = ["float64_field", "spot_check", "accumulated", "score_perturbation", "SPOT_CHECKS"]

SPOT_CHECKS = 3  # field evaluations in arb per run (the first one also decomposes V in arb)


def float64_field(instance: Instance):
    """The field ``(t, z) ↦ ż`` exactly as a float64 run evaluates it: in eigen-coordinates
    for ``V`` diagonalisable over ``R`` (:class:`~verify.flow.fields.EigenRescaledField`, mapped
    back), else :class:`~verify.flow.fields.VectorField`."""
    model = instance.model
    if EigenRescaledField.applies(model):
        eigen = EigenRescaledField(model, instance.n)
        return lambda t, z: eigen.to_z(eigen(t, eigen.to_w(z)))
    field = VectorField(model, instance.n, Float64())
    return lambda t, z: field(t, z)


def spot_check(instance: Instance, times: list[float], states: list[np.ndarray]) -> dict:
    """``δ_k`` (absolute, largest entry) and ``δ_k / max|f|`` at each ``(times[k], states[k])``,
    and the bits of the ``arb`` evaluations (:func:`~verify.flow.precision_policy.working_bits` up
    to the last of ``times``: the scores there need no more).

    Each ``arb`` evaluation's scores are also those the score comparison reads (they are formed
    once per sample, not twice), and the float64 scores come from one float64 field."""
    fast = float64_field(instance)
    bits = working_bits(instance, max(max((float(t) for t in times), default=0.0), 1e-9))
    backend = Arb(bits=bits)
    plain = VectorField(instance.model, instance.n, Float64())
    max_abs, relative, scores = [], [], []
    with backend.working_precision():
        field = _ScoresKept(instance.model, instance.n, backend)
        for t, z in zip(times, states, strict=True):
            z = np.asarray(z, float)
            field.kept = None
            exact = field(t, backend.from_float(z))
            # the difference is taken in arb: rounding the reference to float64 first would add
            # up to half an ulp, the size of what is measured
            difference = backend.to_float(backend.from_float(fast(float(t), z)) - exact)
            max_abs.append(float(np.max(np.abs(difference))))
            size = float(np.max(np.abs(backend.to_float(exact))))
            relative.append(max_abs[-1] / max(size, 1e-300))
            scores.append(_score_difference(plain, field, backend, float(t), z))
    return {"times": [float(t) for t in times], "max_abs": max_abs, "relative": relative,
            "score_max_abs": scores, "bits": bits}


class _ScoresKept(VectorField):
    """The ``arb`` field of :func:`spot_check`, keeping (``kept``) the scores of the head-0
    evaluation its last call made, if it made one (the sphere's one-pass softmax forms its
    scores inline): the same balls :func:`_score_difference` needs at the same state."""

    kept = None

    def scores(self, t, state, head: int = 0):
        result = super().scores(t, state, head)
        if head == 0:
            self.kept = result
        return result


def _score_difference(plain: VectorField, field: _ScoresKept, backend, t: float,
                      z: np.ndarray) -> float:
    """``max |S̃^{64} − S̃|`` at ``(t, z)``: the float64 scaled scores as the run records them
    (``plain``, the float64 field) against ``arb`` (``field``'s kept scores of ``z``, else
    formed here; brought to the float64 run's log-scale ``L``)."""
    S64, L64 = plain.scores(t, z)
    S, L = field.kept if field.kept is not None else field.scores(t, backend.from_float(z))
    if not isinstance(L, (int, float)):
        S = S * (L - backend.scalar(float(L64))).exp()  # e^{L - L64} S̃: the same scores
    elif float(L) != float(L64):
        S = S * backend.scalar(float(L) - float(L64)).exp()
    return float(np.max(np.abs(backend.to_float(backend.from_float(S64) - S))))


def accumulated(sample_times: list[float], deltas: list[float], times: list[float],
                until: float) -> np.ndarray:
    """``∫_0^{min(t, until)} δ(s) ds`` at each of ``times``: ``δ`` is piecewise constant, on each
    interval between samples the larger of its two ends, before the first sample its value,
    after the last sample its value (up to ``until``, the end of the integrated part)."""
    knots = np.r_[0.0, np.asarray(sample_times, float), float(until)]
    values = np.asarray(deltas, float)
    levels = np.maximum(np.r_[values[:1], values], np.r_[values, values[-1:]])
    out = np.zeros(len(times))
    for k, t in enumerate(times):
        right = np.minimum(knots[1:], min(float(t), float(until)))
        out[k] = float(np.sum(np.clip(right - knots[:-1], 0.0, None) * levels))
    return out


def score_perturbation(model, times: list[float], states: np.ndarray,
                       entry_error: np.ndarray) -> np.ndarray:
    r"""First-order bound on the change of the scaled scores ``S̃_ij = <y_i, B y_j>`` (head 0,
    ``B = β QᵀK``) when every entry of the state at ``times[k]`` moves by at most
    ``entry_error[k]``.

    The attention input is ``y_i = Ẽ(t) z_i`` (rescaled form), ``x_i/|x_i|`` (pre-LN) or ``x_i``;
    with ``‖Δy_i‖ ≤ c_i √d e`` (``c_i = ‖Ẽ(t)‖₂``, bounded by ``sqrt(‖Ẽ‖₁‖Ẽ‖_∞)``; ``2/|x_i|``
    for pre-LN; else 1),

    .. math:: |Δ\tilde S_{ij}| \le ‖B‖_2\,\big(‖y_i‖\,Δ_j + Δ_i\,‖y_j‖ + Δ_i Δ_j\big),
              \qquad Δ_i = c_i \sqrt d\, e.

    A row's margin (largest minus second largest score) moves by at most twice its row's largest
    bound. Returns an array of shape ``(len(times), n, n)``.

    >>> from verify.model import Model
    >>> z = np.array([[1.0, 0.0], [0.0, 2.0]])
    >>> bound = score_perturbation(Model(V=[[1, 0], [0, 1]], form="x"), [0.0], z[None], [1e-3])
    >>> dz = np.array([[1e-3, -1e-3], [1e-3, 1e-3]])           # entries moved by 1e-3
    >>> change = np.abs((z + dz) @ (z + dz).T - z @ z.T)
    >>> bool(np.all(change <= bound[0]))
    True
    """

    _, B = model.float_heads()[0]
    B_norm = float(np.linalg.norm(B, 2))
    exponential = ValueExponential(model.V) if model.rescaled else None
    out = np.zeros((len(times), states.shape[1], states.shape[1]))
    for k, (t, state, e) in enumerate(zip(times, states, entry_error, strict=True)):
        if not e > 0:
            continue
        row_norms = np.linalg.norm(state, axis=1)
        if exponential is not None:
            E, _ = exponential.scaled_float(float(t))
            Y, c = state @ E.T, _norm_bound(E)
        elif model.pre_ln:
            Y, c = state / row_norms[:, None], 2.0 / row_norms
        else:
            Y, c = state, 1.0
        delta = np.broadcast_to(c * np.sqrt(state.shape[1]) * e, row_norms.shape)
        y = np.linalg.norm(Y, axis=1)
        out[k] = B_norm * (np.outer(y, delta) + np.outer(delta, y) + np.outer(delta, delta))
    return out
