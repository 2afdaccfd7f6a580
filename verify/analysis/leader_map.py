r"""The certified leader map: which token each token attends to in the hardmax limit.

One rule decides it everywhere a checkpoint is read (:func:`verify.analysis.graph.
certified_argmax`): a row's argmax is *certified* when its lower score bound is at least the
upper bound of every competitor (bounds ``S ∓ r`` rounded outward, :func:`verify.analysis.graph.
score_bounds`); ties within the errors are undecided, never guessed. :func:`hardmax_at` applies
it at a checkpoint of a run (the graph the attention judge, the leader predictions, the
``verify simulate`` summary and the report read); the end certificate of a rescaled run
(:mod:`verify.analysis.end_certificates`) applies it with tokens that coincide within their
errors (:func:`verify.analysis.observed_limits.coincide`) counted as one point.

The continuation legs of a run (:mod:`verify.flow.continuation`) certify a leader map over a
time interval, with the closed form of the linear flow and their own a-priori state error;
their test at the start of a leg (top-2 score gap) only proposes a candidate.
"""

from __future__ import annotations

from verify.analysis.graph import hardmax_graph

__all__ = ["hardmax_at"]


def hardmax_at(traj, k: int, mask=None):
    """The certified hardmax graph at checkpoint ``k`` (scores with their error radius)."""

    return hardmax_graph(traj.scaled_scores[k], traj.score_radius(k), mask)
