r"""The flow: one run of the dynamics, from the vector field to the trajectory.

* :mod:`~verify.flow.fields` — vector fields of the model family on one score kernel;
* :mod:`~verify.flow.compiled` — the optional compiled (Numba) softmax of the float64 field,
  for large systems;
* :mod:`~verify.flow.exponential` — ``e^{tV}`` from a decomposition computed once;
* :mod:`~verify.flow.precision_policy` — working precision from what grows along a run;
* :mod:`~verify.flow.simulate` — :func:`simulate`: field, backend, solver and controller composed,
  the one leg loop;
* :mod:`~verify.flow.solvers` — the solvers (DOP853, extrapolation, discrete layers) and the
  step-size controller, kept apart;
* :mod:`~verify.flow.legs` — the ``Leg``/``Certifier`` protocol of certified legs;
* :mod:`~verify.flow.continuation`, :mod:`~verify.flow.consensus_cap` — the certified legs
  (hardmax continuation, consensus cap);
* :mod:`~verify.flow.roundoff` — the round-off a float64 reference cannot see;
* :mod:`~verify.flow.trajectory` — the result: checkpoints, scores, attention, error estimate.
"""
