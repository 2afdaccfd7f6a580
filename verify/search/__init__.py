r"""Conjecture search: instance spaces, Hypothesis-driven strategies, counterexample shrinking.

* :class:`SearchSpace`, :func:`parse_search` — the ``[search]`` table of a conjecture file: the
  ranges of ``n`` and ``d``, the classes of ``V`` and ``QᵀK``, ``beta``, token distributions,
  fixed model options, horizon (defaults follow the conjecture's hypotheses);
* :class:`Draw`, :func:`draw_strategy`, :func:`build_instance`, :func:`search` — small
  structured parameters are drawn by Hypothesis, arrays by a seeded NumPy generator;
  :func:`search` feeds the draws to an oracle until it reports a counterexample, the number of
  examples or the time budget runs out (:class:`SearchStats` records what was covered);
* :func:`shrink`, :func:`shrink_candidates`, :func:`complexity` — our own shrinking moves
  (drop tokens, lower ``d``, simplify ``V`` and ``QᵀK``, round entries to simple rationals),
  each accepted only when the oracle still fails.

Nothing here knows about claims: the oracle is a function of an instance.
"""

from verify.search._shrink import ShrinkResult, complexity, shrink, shrink_candidates
from verify.search._space import SearchSpace, parse_search
from verify.search._strategies import Draw, SearchStats, build_instance, draw_strategy, search

__all__ = ["SearchSpace", "parse_search", "Draw", "SearchStats", "build_instance",
           "draw_strategy", "search", "ShrinkResult", "complexity", "shrink",
           "shrink_candidates"]
