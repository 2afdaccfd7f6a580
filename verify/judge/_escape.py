r"""The conclusion ``escapes`` (lemmas of §7): tokens escape at the rate of :math:`e^{tV}`, i.e.
the rescaled :math:`z_i = e^{-tV} x_i` tends to a limit :math:`\gamma_i \ne 0`; at most
``at_most_bounded`` of them may stay bounded, and those tend to 0.

For each token the limit :math:`\gamma_i` of :math:`z_i` is fitted from the trend
(:func:`~verify.judge._shared.token_fits`): it *escapes* when :math:`|\gamma_i|` exceeds its
error bar (with ``same_sign``: :math:`\gamma_i` has the sign of :math:`x_i(0)` — :math:`x_i
\ge c e^{t}` — beyond the bar). A token whose :math:`\gamma_i` is within its bar of 0 counts as
*bounded*; a bounded token must tend to 0 in :math:`x` — by the trend, or exactly when the
exact symmetries pin it at 0 (:func:`~verify.analysis.end_certificates.pinned_subspaces`). A token
that does not escape beyond the allowed number is a violation only with a certificate
(its certified limit is 0, or has the wrong sign).

Examples
--------
>>> from types import SimpleNamespace
>>> from verify.claim import CheckRequest
>>> from verify.vocabulary.conclusions import ConclusionSpec
>>> from verify.predict._evaluation import Evaluation
>>> from verify.model import Instance, Model
>>> from verify.flow.simulate import simulate
>>> inst = Instance(Model(V=[[1]]), [[-2], [0], [2]], name="s#0")
>>> req = CheckRequest(None, SimpleNamespace(name="s"), inst, None, 6, 25, "float64")
>>> spec = ConclusionSpec("escapes", {"at_most_bounded": 1})
>>> judge_escapes(Evaluation(req, simulate(inst, 6, checkpoints=25), spec)).verdict.value
'holds'
"""

from __future__ import annotations

import math

import numpy as np

from verify.analysis.end_certificates import pinned_subspaces
from verify.analysis.evidence import Basis
from verify.digits import trusted
from verify.exact.plain import fail
from verify.judge._decision import combine, decide, inconclusive, superseded_by_certificate
from verify.judge._shared import COMMON_KEYS, _indices, formula_or_prediction, token_fits
from verify.judge._trend import tends_to_zero
from verify.judge._verdicts import InstanceResult
from verify.predict._evaluation import quantity_error
from verify.vocabulary.conclusions import register_conclusion

__all__ = ["judge_escapes"]


def _validate(p, source, where):
    tokens = p.get("tokens")
    if isinstance(tokens, list):
        if not tokens or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 1
                                 for i in tokens):
            fail(source, f"{where}.tokens", f"{tokens!r} must list token indices from 1.")
    else:
        formula_or_prediction(p, "tokens", ("indices",), source, where)
    bounded = p.get("at_most_bounded", 0)
    if not isinstance(bounded, int) or isinstance(bounded, bool) or bounded < 0:
        fail(source, f"{where}.at_most_bounded", f"{bounded!r} must be a whole number ≥ 0.")
    if not isinstance(p.get("same_sign", False), bool):
        fail(source, f"{where}.same_sign", f"{p['same_sign']!r} must be true or false.")


@register_conclusion(
    "escapes", summary="the tokens escape like e^{tV}: z_i = e^{-tV} x_i → γ_i ≠ 0 (at most "
                       "`at_most_bounded` stay bounded, and those tend to 0)",
    needs="the limit γ_i of each z_i fitted from the trend (errors from the reference run): "
          "escapes when |γ_i| exceeds its bar (same_sign: sign(x_i(0)) γ_i does); a bounded "
          "token (γ_i within its bar of 0) must tend to 0 in x (trend, or pinned at 0 by the "
          "exact symmetries). Violated only with a certificate of the end state.",
    asymptotic=True, validate=_validate,
    keys={"tokens": "the tokens claimed to escape (indices from 1, a formula or a prediction; "
                    "default all)",
          "at_most_bounded": "how many of them may stay bounded instead (default 0)",
          "same_sign": "true: each escapes on the side of its initial value (x_i ≥ c e^t with "
                       "sign(c) = sign(x_i(0)))",
          "tail_fraction": COMMON_KEYS["tail_fraction"]})
def judge_escapes(ev) -> InstanceResult:
    """Which tokens escape (module docstring)."""

    p, req, traj = ev.parameters, ev.request, ev.trajectory
    if traj.z is None or traj.x is None:
        return inconclusive(req, "escapes needs both z and x (a run in the rescaled form).")
    tokens = _indices(ev, "tokens") if "tokens" in p else list(range(ev.instance.n))
    allowed = int(p.get("at_most_bounded", 0))
    x0 = ev.instance.x0_float()
    fits = token_fits(ev)
    pinned = pinned_subspaces(ev.instance, traj)
    parts, bounded, evidence = [], [], {"gamma": {}}
    for i in tokens:
        f = fits[i]
        if not (f.stabilised and math.isfinite(f.limit_error)):
            parts.append(inconclusive(req, f"z_{i + 1} has no stabilised limit ({f.kind}: "
                                      f"{f.reason}); integrate longer."))
            continue
        gamma = np.atleast_1d(np.asarray(f.limit, dtype=float))
        size = float(np.linalg.norm(gamma))
        evidence["gamma"][str(i + 1)] = [float(v) for v in gamma]
        if p.get("same_sign"):
            signed = float(np.sign(x0[i]) @ gamma)
            parts.append(decide(req, signed, f.limit_error, f"token {i + 1} escapes on its side "
                                f"(sign(x(0))·γ = {trusted(signed, f.limit_error)})",
                                unit="z-limit γ", basis=Basis.FIT))
        elif size > f.limit_error:
            parts.append(decide(req, size, f.limit_error, f"token {i + 1} escapes "
                                f"(|γ| = {trusted(size, f.limit_error)})", unit="z-limit |γ|",
                                basis=Basis.FIT))
        else:
            bounded.append(i)
    if len(bounded) > allowed:
        parts.append(_certified(ev, tokens, allowed, x0) or inconclusive(
            req, f"{len(bounded)} token(s) {[i + 1 for i in bounded]} have limits γ within their "
            f"error of 0 (at most {allowed} may stay bounded): undecided — integrate longer."))
    else:
        for i in bounded:
            if pinned is not None and pinned[i].shape[1] == 0:
                parts.append(decide(req, 1, 0, f"the bounded token {i + 1} is pinned at 0 by "
                                    "the exact symmetries (x ≡ 0)", unit="exact fact",
                                    basis=Basis.EXACT))
                continue
            X = np.linalg.norm(np.asarray(traj.x[:, i], dtype=float), axis=1)
            R = np.linalg.norm(np.asarray(traj.reference_run.x[:, i], dtype=float), axis=1)
            trend = tends_to_zero(traj.t, X, quantity_error(X, R),
                                  tail=float(p.get("tail_fraction", 0.5)), name=f"|x_{i + 1}|")
            parts.append(trend.judge(req, {"bounded_token": i + 1}))
    parts = superseded_by_certificate(parts, lambda: _certified(ev, tokens, allowed, x0))
    return combine(req, parts, evidence)


def _certified(ev, tokens, allowed: int, x0) -> InstanceResult | None:
    """A violation on a certificate: too many tokens pinned at 0 by the exact symmetries (an
    exact invariant set), or (``same_sign``) a token whose limit certified by the end state's
    certificate is on the wrong side."""

    pinned = pinned_subspaces(ev.instance, ev.trajectory)
    stuck = [i for i in tokens if pinned is not None and pinned[i].shape[1] == 0]
    if len(stuck) > allowed:  # x_i ≡ 0 exactly, forever
        return decide(ev.request, allowed - len(stuck), 0, f"at most {allowed} token(s) stay "
                      f"bounded (pinned at 0 by the exact symmetries: "
                      f"{[i + 1 for i in stuck]})", unit="tokens", basis=Basis.EXACT,
                      certificate={"kind": "invariant-set", "basis": Basis.EXACT.value,
                                   "statement": "the exact symmetries of the weights and the "
                                   f"initial tokens pin tokens {[i + 1 for i in stuck]} at 0: "
                                   "x_i(t) = 0 for all t, exactly."})
    cert, _ = ev.certificate()
    if cert is None or cert.variable != "z":
        return None
    limit, error = np.asarray(cert.limit, dtype=float), np.asarray(cert.limit_error)
    d = limit.shape[1]
    if ev.parameters.get("same_sign"):
        signed = {i: float(np.sign(x0[i]) @ limit[i]) for i in tokens}
        i = min(signed, key=signed.get)
        if signed[i] < -math.sqrt(d) * error[i]:
            return decide(ev.request, signed[i], math.sqrt(d) * error[i], f"token {i + 1} "
                          "escapes on its side (its certified limit is on the other side)",
                          unit="z-limit γ", certificate=cert.to_dict(), basis=cert.basis)
    return None
