r"""The vocabulary of claim files: named hypotheses, conclusion and
prediction types.

The registries live here, below both the code that registers (:mod:`verify.judge`,
:mod:`verify.predict`) and the code that looks up (:mod:`verify.claim`, the runner).

* :mod:`~verify.vocabulary.hypotheses` — named hypotheses (:data:`HYPOTHESES`);
* :mod:`~verify.vocabulary.hypothesis_expressions` — hypotheses written as expressions and
  :func:`check_hypotheses`, the scope of a claim on an instance;
* :mod:`~verify.vocabulary.conclusions` — :data:`CONCLUSIONS` and :data:`PREDICTIONS`.
"""
