r"""The certified leader map: which token each token attends to
in the hardmax limit, decided with the scores' error radii (one rule for the whole library).

A row's argmax is *certified* when its largest score exceeds every other by more than the sum
of their error radii; ties within the errors are undecided, never guessed.
"""

from __future__ import annotations

from verify.analysis.graph import hardmax_graph

__all__ = ["hardmax_at"]


def hardmax_at(traj, k: int, mask=None):
    """The certified hardmax graph at checkpoint ``k`` (scores with their error radius)."""

    return hardmax_graph(traj.scaled_scores[k], traj.score_radius(k), mask)
