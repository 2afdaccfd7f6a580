r"""A real sentence under one head's fixed weights: leaders, hyperplanes, hardmax attention.

:func:`sentence_dynamics` integrates a sentence's projected embeddings
(:func:`verify.weights.sentence_instance`) with :func:`verify.flow.simulate.simulate` (error
estimate included) and reads, at the horizon:

* the **leaders** and the **attention at t = T** rounded to its hardmax, from the certified
  hardmax graph (:func:`verify.analysis.summary.attention_reading`: every score margin certified
  against the error estimate, or the row is reported undecided) — a finite-time reading, called the
  limit of $P$ only where a certificate carries it to every later time (``boolean_is_limit``);
* for a good triple in the plain model, the **predicted** hyperplanes of Theorem 4.2,
  $\{\varphi_1^* = c\}$ with $c \in \{a, 0, b\}$, $a, b$ the extreme values of
  $\varphi_1^*$ over the leaders ($\varphi_1^*$ from :func:`verify.exact.eigenpair`, a
  certified enclosure), against the **observed** $\varphi_1^*(z_i(T))$ of every token and its
  distance to the nearest hyperplane.

Examples
--------
>>> import numpy as np
>>> from verify.weights._heads import HeadWeights
>>> eye = np.eye(2, dtype=np.float32)
>>> head = HeadWeights(0, 0, eye, eye, np.diag([1, -0.5]).astype(np.float32), eye)
>>> x = np.array([[1.0, 0.3], [0.2, -0.1], [-0.8, 0.5]])
>>> out = sentence_dynamics(head, x, ["a", "b", "c"], horizon=6, checkpoints=7)
>>> out["leader_words"], out["boolean_rank"]
(['a', 'c'], 2)
"""

from __future__ import annotations

import numpy as np

from verify.analysis.summary import attention_reading
from verify.exact import eigenpair, good_triple
from verify.flow.simulate import simulate
from verify.weights._heads import HeadWeights
from verify.weights._sentence import sentence_instance

__all__ = ["sentence_dynamics"]


def sentence_dynamics(head: HeadWeights, x: np.ndarray, words: list[str], *,
                      variant: str = "plain", horizon: float = 8,
                      checkpoints: int = 33) -> dict:
    """Run ``head`` on the tokens ``x`` (``n × d_model``) and read the limit objects.

    Returns a dict: ``head``, ``variant``, ``horizon``, ``words``, ``times``, ``phi_paths``
    (``φ₁*(z_i(t))``, or ``None``), ``leaders`` (0-based), ``leader_words``, ``undecided``,
    ``boolean_matrix`` (the 0/1 attention at the horizon), ``boolean_rank``,
    ``boolean_is_limit`` (a certificate carries it to all later times), ``good_triple`` (the
    certified check's text),
    ``hyperplanes`` (``offsets`` a, 0, b; ``per_token`` value and distance; ``error``),
    ``digits`` (correct digits at the horizon) and ``status``.
    """

    instance = sentence_instance(head, x, variant)
    traj = simulate(instance, horizon, checkpoints=checkpoints)
    reading = attention_reading(traj, mask=instance.model.mask_for(instance.n),
                                instance=instance)
    leaders = list(reading.get("leaders", []))
    Q, K, V = head.head_space()
    check = good_triple(head.beta * Q, K, V)
    out = {"head": head.name, "variant": variant, "horizon": float(horizon),
           "words": list(words), "times": [float(t) for t in traj.times], "phi_paths": None,
           "leaders": leaders, "leader_words": [words[i] for i in leaders],
           "undecided": reading.get("undecided", []),
           "boolean_matrix": reading.get("boolean_matrix"),
           "boolean_rank": reading.get("boolean_rank"),
           "boolean_is_limit": bool(reading.get("limit")), "good_triple": check.explanation,
           "hyperplanes": None, "status": str(getattr(traj, "status", "")),
           "digits": None if traj.digits is None else float(np.min(traj.digits[-1:]))}
    if check.holds is not True or variant != "plain":  # Theorem 4.2 is about the plain model
        return out
    pair = eigenpair(V, 0)
    phi = pair.left_float
    paths = np.asarray(traj.z, dtype=float) @ phi
    out["phi_paths"] = paths.tolist()
    if leaders and reading.get("decided"):
        final = paths[-1]
        offsets = sorted({float(final[leaders].min()), 0.0, float(final[leaders].max())})
        norm = float(np.linalg.norm(phi))
        per_token = [{"word": w, "phi": float(v),
                      "distance": float(min(abs(v - c) for c in offsets) / norm)}
                     for w, v in zip(words, final, strict=True)]
        out["hyperplanes"] = {"offsets": offsets, "per_token": per_token,
                              "phi_radius": float(pair.radius)}
    return out
