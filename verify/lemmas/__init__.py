r"""The theory's trapping lemmas, checked in ball arithmetic, and the independent certificate
checker.

Each lemma is a small module with its statement, its source (the paper's theorem, or its own
proof in the docstring), the hypotheses it checks in balls on the state at one time
:math:`t_1`, and what it certifies for all :math:`t \ge t_1`:

* :mod:`verify.lemmas.leader_map` — a certified hardmax leader map (``V = λI``, Theorem 3.1,
  Theorem 2.1 in ``d = 1``): limits, Boolean attention, doubly exponential rate;
* :mod:`verify.lemmas.good_triple` — the hyperplanes of Theorem 4.2 for a good triple;
* :mod:`verify.lemmas.hyperplane_drift` — inside a trapped side of a good triple the followers
  attend to one leader; a follower certified to drift along its hyperplane forever, or the side
  certified to converge;
* :mod:`verify.lemmas.sphere_consensus` — consensus on the sphere with an exponential rate;
* :mod:`verify.lemmas.masked_token` — a token closed under the mask (the causal first token,
  or a graph mask's row with its one 1 on the diagonal) is an exact linear flow: fixed,
  converging, or certified never to converge;
* :mod:`verify.lemmas.masked_cap` — on the sphere with ``V = cI``, a closed set of tokens that
  all attend to a token attending only to itself (the causal first token) converges to it once
  it lies in the open hemisphere around it, exponentially;
* :mod:`verify.lemmas.power_decay` — the ``V = -μI`` collapse with an algebraic bound;
* :mod:`verify.lemmas.equilibrium` — an isolated equilibrium (Krawczyk, logarithmic norm)
  attracting the state: a certified limit, exponentially;
* :mod:`verify.lemmas.facts` — the claim-level facts derived from them;
* :mod:`verify.lemmas.checker` — ``verify certificate FILE``.

This package imports only python-flint and the standard library (a test enforces it): the
checker shares no code with the integrator or the judges.
"""

from verify.lemmas.checker import SCHEMA, CheckResult, check_certificate, check_file

__all__ = ["SCHEMA", "CheckResult", "check_certificate", "check_file"]
