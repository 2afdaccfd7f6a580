r"""Predictions read off the certified hardmax graph at the **first certified time** t₁ of the
run: the leaders, each token's leader and its position (``leader-targets``), and the extreme
tokens of Theorem 2.1 (``extreme-tokens``, from the initial data alone).

A *leader* is a token whose certified hardmax target is itself. The leader map is read **once
per run**, at the first checkpoint :math:`t_1` where it is certified (:func:`certified_leaders`),
and the same prediction is used at the horizon :math:`T` and at the re-check :math:`3T/2` — never
read at the end of the run it is compared with (there, each leader's distance to its own
position would be 0 by construction). :math:`t_1` is the first checkpoint where

* with :math:`V = \lambda I`, :math:`\lambda > 0` (model (1.1)): the hardmax leader-map
  certificate holds (:func:`~verify.analysis.end_certificates.leader_map_at`: every argmax
  certified, every token following a leader, the residual soft attention unable to close a margin).
  By that lemma each leader's position at :math:`t_1` is its limit within the state's error plus the
  residual motion :math:`R` **for all** :math:`t \ge t_1`;
* otherwise: the certified hardmax graph (scores within their estimated error times the
  measured safety factor) sends every decided row to a leader, the rows still undecided stay
  undecided at every later checkpoint of the run (exact ties), and each leader's residual soft
  weight moves it by less than its error estimate per unit time
  (:math:`(1 - P_{\ell\ell})\,\mathrm{diam} \le e_\ell`). No lemma carries this to
  :math:`t = \infty`: the prediction's error covers the state at :math:`t_1` only.

Either way the positions are read off a run, so a prediction rests on the *estimate* basis
(``Value.basis``); its evidence says at which ``t₁`` it was read and whether its error is a bound
to :math:`t = \infty` (``bound_to_infinity``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from verify.analysis.end_certificates import _scalar_value_matrix, leader_map_at
from verify.analysis.evidence import Basis
from verify.analysis.graph import undecided_nodes
from verify.analysis.leader_map import hardmax_at
from verify.errors import VerifyError
from verify.exact.escape import above_escape_threshold, escape_threshold_value
from verify.predict._evaluation import Value, projected_tokens
from verify.vocabulary.conclusions import register_prediction

__all__ = ["Unavailable", "Leaders", "certified_leaders"]


class Unavailable(VerifyError):
    """The run does not determine the prediction yet (e.g. no certified leader)."""


@dataclass(frozen=True)
class Leaders:
    """The certified leader structure at the first certified checkpoint ``t₁`` of a run.

    Attributes
    ----------
    time : float
        ``t₁``.
    leaders : list of int
        0-based indices of the tokens whose certified target is themselves.
    leader_of : dict
        Token -> its certified target, for the rows that are decided.
    undecided : list of int
    positions : ndarray, shape (n, d)
        The tokens (``z`` when the run has it, else ``x``) at ``t₁``.
    errors : ndarray, shape (n,)
        Error of each position as a limit: the state's error estimate at ``t₁`` plus the
        residual motion (module docstring).
    lemma : bool
        Whether a lemma makes ``errors`` a bound for all ``t ≥ t₁`` (``V = λI``).
    """

    time: float
    leaders: list
    leader_of: dict
    undecided: list
    positions: np.ndarray
    errors: np.ndarray
    lemma: bool

    def evidence(self) -> dict:
        """What every prediction built on these leaders records."""
        return {"leaders": [i + 1 for i in self.leaders], "read_at": self.time,
                "bound_to_infinity": self.lemma,
                "read_by": "hardmax leader-map lemma (V = λI)" if self.lemma else
                           "certified hardmax graph, settled (no lemma beyond t₁)"}


def _from_certificate(instance, traj, k: int) -> Leaders | None:
    cert, _ = leader_map_at(instance, traj, k)
    if cert is None:
        return None
    error = np.asarray(traj.error[k], dtype=float)
    if not cert.data["residual"] <= float(np.max(error)):
        return None  # the lemma holds, but the soft residual still dominates the estimate
    leader_of = {i: j for i, j in enumerate(cert.data["leader_of"])
                 if i not in cert.data["pinned"]}
    positions = np.asarray(traj.z[k], dtype=float)
    return Leaders(float(traj.times[k]), sorted(cert.data["leaders"]), leader_of, [], positions,
                   error + cert.data["residual"], True)


def _settled_graph(instance, traj, k: int, undecided_later: list) -> Leaders | None:
    G = hardmax_at(traj, k, instance.model.mask_for(instance.n))
    undecided = sorted(undecided_nodes(G))
    if any(i not in later for i in undecided for later in undecided_later):
        return None  # a row still to be decided: the map is not settled
    targets = {i: set(G.successors(i)) for i in G if i not in undecided}
    found = sorted(i for i, t in targets.items() if t == {i})
    if not found or any(not t <= set(found) for t in targets.values()):
        return None
    tokens = np.asarray(traj.z[k] if traj.z is not None else traj.x[k], dtype=float)
    diameter = float(np.max(np.linalg.norm(tokens[:, None] - tokens[None], axis=2)))
    soft = 1.0 - np.max(np.asarray(traj.attention[k], dtype=float), axis=1)
    error = np.asarray(traj.error[k], dtype=float)
    motion = soft * diameter
    if np.any(motion[found] > error[found]):
        return None  # the leaders still move beyond their error estimate
    leader_of = {i: next(iter(t)) for i, t in targets.items() if len(t) == 1}
    return Leaders(float(traj.times[k]), found, leader_of, undecided, tokens, error + motion,
                   False)


def _first_certified(instance, traj) -> Leaders | None:
    """The :class:`Leaders` at the first certified checkpoint of ``traj`` (module docstring)."""

    m = len(traj.times)
    if _scalar_rescaled(instance):
        for k in range(m):
            found = _from_certificate(instance, traj, k)
            if found is not None:
                return found
    mask = instance.model.mask_for(instance.n)
    undecided = [set(undecided_nodes(hardmax_at(traj, k, mask))) for k in range(m)]
    for k in range(m):
        found = _settled_graph(instance, traj, k, undecided[k + 1:])
        if found is not None:
            return found
    return None


def _scalar_rescaled(instance) -> bool:
    """Model (1.1) in the rescaled form with ``V = λI``, ``λ > 0``: the leader-map lemma."""

    model = instance.model
    return model.rescaled and not model.departures() and \
        _scalar_value_matrix(model) is not None


def certified_leaders(ev) -> Leaders:
    """The :class:`Leaders` of the evaluation's whole run (read once, cached for the whole run:
    the horizon and its re-check share it); :class:`Unavailable` without a certified time, or
    when ``t₁`` lies beyond the part of the run being judged.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> from verify.predict._evaluation import Evaluation
    >>> from verify.model import Instance, Model
    >>> from verify.flow.simulate import simulate
    >>> inst = Instance(Model(V=[[1, 0], [0, 1]]), [[2, 0], [0, 2], ["3/2", "1/2"]])
    >>> req = SimpleNamespace(instance=inst)
    >>> found = certified_leaders(Evaluation(req, simulate(inst, 8, checkpoints=17), None))
    >>> found.leaders, found.leader_of, found.lemma, found.time < 8
    ([0, 1], {0: 0, 1: 1, 2: 0}, True, True)
    """
    shared = ev.predictions
    if "leaders" not in shared:
        shared["leaders"] = _first_certified(ev.instance, ev.whole_run)
    found = shared["leaders"]
    if found is None:
        raise Unavailable(f"the leader map is not certified at any checkpoint up to t = "
                          f"{float(ev.whole_run.times[-1]):.4g} (a margin within its error, or "
                          "leaders still moving beyond their error).")
    if found.time > float(ev.trajectory.times[-1]):
        raise Unavailable(f"the leader map is first certified at t₁ = {found.time:.4g}, after "
                          f"t = {float(ev.trajectory.times[-1]):.4g}.")
    return found


@register_prediction("leader-targets", gives="targets",
                     summary="each token's certified leader's position at the first certified "
                             "time t₁")
def leader_targets(ev) -> Value:
    """Per token, the position of its certified leader (through the conclusion's
    ``functional``, if any)."""

    found = certified_leaders(ev)
    missing = [i + 1 for i in range(ev.instance.n) if i not in found.leader_of]
    if missing:
        raise Unavailable(f"tokens {missing[:10]} have no certified leader at t = "
                          f"{found.time:.4g}.")
    order = [found.leader_of[i] for i in range(ev.instance.n)]
    targets = projected_tokens(ev, found.positions[order])
    return Value(targets, float(np.max(found.errors[order])),
                 {**found.evidence(),
                  "leader_of": [found.leader_of[i] + 1 for i in range(ev.instance.n)]},
                 source="prediction", basis=Basis.ESTIMATE)


@register_prediction("extreme-tokens", gives="indices",
                     summary="the tokens with the smallest and the largest x(0) (d = 1)")
def extreme_tokens(ev) -> Value:
    """Theorem 2.1: the leaders are the extreme tokens (indices from 1), exactly."""
    x0 = ev.instance.x0
    if x0.shape[1] != 1:
        raise Unavailable("extreme-tokens is defined for d = 1.")
    values = [x0[i, 0] for i in range(x0.shape[0])]
    low, high = values.index(min(values)), values.index(max(values))
    return Value(np.array(sorted({low + 1, high + 1}), dtype=float), 0.0,
                 {"extreme_tokens": sorted({low + 1, high + 1})}, source="prediction",
                 basis=Basis.EXACT)


@register_prediction("threshold-tokens", gives="indices",
                     summary="the tokens beyond the escape threshold ±a, a² = n² e^{−a²} (d = 1)")
def threshold_tokens(ev) -> Value:
    """The extreme tokens with ``x(0) > a`` or ``x(0) < −a`` (certified in ball arithmetic)."""

    x0, n = ev.instance.x0, ev.instance.n
    if x0.shape[1] != 1:
        raise Unavailable("threshold-tokens is defined for d = 1.")
    values = [x0[i, 0] for i in range(n)]
    picked = []
    for sign, index in ((1, values.index(max(values))), (-1, values.index(min(values)))):
        if above_escape_threshold(sign * values[index], n):
            picked.append(index + 1)
    if not picked:
        raise Unavailable("no extreme token lies beyond the escape threshold.")
    return Value(np.array(sorted(set(picked)), dtype=float), 0.0,
                 {"a": escape_threshold_value(n), "beyond": sorted(set(picked))},
                 source="prediction", basis=Basis.CERTIFICATE)
