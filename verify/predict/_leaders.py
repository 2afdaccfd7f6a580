r"""Predictions read off the certified hardmax graph at the end of the run: the leaders, each
token's leader and its position (``leader-targets``), and the extreme tokens of Theorem 2.1
(``extreme-tokens``, from the initial data alone).

A *leader* is a token whose certified hardmax target is itself (:func:`certified_leaders`):
its row's score margin exceeds the score error bound. Its position at the horizon is its limit
up to the residual soft attention, which :func:`certified_leaders` bounds by
:math:`(1 - P_{\ell\ell}) \cdot \mathrm{diam}` per unit time (it is doubly exponentially small
once the margin is certified); the trajectory's error estimate is added.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from verify.claim._vocabulary import register_prediction
from verify.errors import VerifyError
from verify.judge._evaluation import Value

__all__ = ["Unavailable", "Leaders", "certified_leaders"]


class Unavailable(VerifyError):
    """The run does not determine the prediction yet (e.g. no certified leader)."""


@dataclass(frozen=True)
class Leaders:
    """The certified leader structure at the last checkpoint of a run.

    Attributes
    ----------
    time : float
    leaders : list of int
        0-based indices of the tokens whose certified target is themselves.
    leader_of : dict
        Token -> its certified target, for the rows that are decided.
    undecided : list of int
    positions : ndarray, shape (n, d)
        The tokens (``z`` when the run has it, else ``x``) at the last checkpoint.
    errors : ndarray, shape (n,)
        Error bound of each position as a limit: the state's error estimate plus the motion
        allowed by the residual soft attention over one unit of time.
    """

    time: float
    leaders: list
    leader_of: dict
    undecided: list
    positions: np.ndarray
    errors: np.ndarray


def certified_leaders(ev) -> Leaders:
    """The :class:`Leaders` of ``ev.trajectory`` (cached); :class:`Unavailable` without any.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> from verify.judge._evaluation import Evaluation
    >>> from verify.model import Instance, Model
    >>> from verify.simulate import simulate
    >>> inst = Instance(Model(V=[[1, 0], [0, 1]]), [[2, 0], [0, 2], ["3/2", "1/2"]])
    >>> req = SimpleNamespace(instance=inst)
    >>> found = certified_leaders(Evaluation(req, simulate(inst, 8, checkpoints=9), None))
    >>> found.leaders, found.leader_of
    ([0, 1], {0: 0, 1: 1, 2: 0})
    """
    if "leaders" in ev.cache:
        return ev.cache["leaders"]
    from verify.graph import undecided_nodes
    from verify.judge._attention import hardmax_at

    traj, instance = ev.trajectory, ev.instance
    k = len(traj.times) - 1
    G = hardmax_at(traj, k, instance.model.mask_for(instance.n))
    undecided = sorted(undecided_nodes(G))
    targets = {i: set(G.successors(i)) for i in G if i not in undecided}
    found = sorted(i for i, t in targets.items() if t == {i})
    if not found:
        raise Unavailable(f"no certified leader at t = {float(traj.times[k]):.4g} (every "
                          "self-attention margin is within its error).")
    leader_of = {i: next(iter(t)) for i, t in targets.items()
                 if len(t) == 1 and next(iter(t)) in found}
    tokens = np.asarray(traj.z[k] if traj.z is not None else traj.x[k], dtype=float)
    diameter = float(np.max(np.linalg.norm(tokens[:, None] - tokens[None], axis=2)))
    soft = 1.0 - np.max(np.asarray(traj.attention[k], dtype=float), axis=1)
    errors = np.asarray(traj.error[k], dtype=float) + soft * diameter
    ev.cache["leaders"] = Leaders(float(traj.times[k]), found, leader_of, undecided, tokens,
                                  errors)
    return ev.cache["leaders"]


@register_prediction("leader-targets", gives="targets",
                     summary="each token's certified leader's position at the horizon")
def leader_targets(ev) -> Value:
    """Per token, the position of its certified leader (through the conclusion's
    ``functional``, if any)."""
    from verify.judge._limits import projected_tokens

    found = certified_leaders(ev)
    missing = [i + 1 for i in range(ev.instance.n) if i not in found.leader_of]
    if missing:
        raise Unavailable(f"tokens {missing[:10]} have no certified leader at t = "
                          f"{found.time:.4g}.")
    order = [found.leader_of[i] for i in range(ev.instance.n)]
    targets = projected_tokens(ev, found.positions[order])
    return Value(targets, float(np.max(found.errors[order])),
                 {"leaders": [i + 1 for i in found.leaders],
                  "leader_of": [found.leader_of[i] + 1 for i in range(ev.instance.n)]},
                 source="prediction")


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
                 {"extreme_tokens": sorted({low + 1, high + 1})}, source="prediction")


@register_prediction("threshold-tokens", gives="indices",
                     summary="the tokens beyond the escape threshold ±a, a² = n² e^{−a²} (d = 1)")
def threshold_tokens(ev) -> Value:
    """The extreme tokens with ``x(0) > a`` or ``x(0) < −a`` (certified in ball arithmetic)."""
    from verify.exact.escape import above_escape_threshold, escape_threshold_value

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
                 source="prediction")
