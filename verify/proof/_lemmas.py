r"""Choosing a lemma's parameters on an enclosure at :math:`t_1`, and writing the certificate.

For each lemma of :mod:`verify.lemmas` a *builder* reads the balls of an
:class:`~verify.enclosure.Enclosure` at a mark :math:`t_1`, proposes the parameters (the leader
map and the allowances :math:`\rho, \Delta`; the basis :math:`T` and the bounds :math:`\mu_\pm`)
and asks the lemma's own check — the same code the independent checker runs — whether its
hypotheses hold. The builders only *propose*; what they return is a certificate document that
:func:`verify.lemmas.check_certificate` accepts or rejects on its own.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from flint import arb, ctx

from verify.lemmas import good_triple, leader_map, sphere_consensus
from verify.lemmas._balls import CheckFailure, LemmaReport, ball_matrix, matrix_text
from verify.lemmas._instance import check_symmetries, pinned_tokens, read_instance
from verify.lemmas.checker import SCHEMA

__all__ = ["instance_text", "symmetry_text", "try_lemma", "lemma_for"]


def _strings(matrix) -> list:
    return [[str(Fraction(v)) for v in row] for row in matrix]


def instance_text(instance) -> dict:
    """The exact instance as a certificate writes it (rationals as ``"p/q"``)."""
    model = instance.model
    head = model.heads[0]
    variant = model.describe()  # the model's own plain summary (the mask: "adjacency")
    return {"name": instance.name, "V": _strings(head.V), "Q": _strings(head.Q),
            "K": _strings(head.K), "x0": _strings(instance.x0),
            "model": {**{key: variant[key] for key in ("form", "attention", "mask",
                                                        "normalisation", "heads", "beta")},
                      "mlp": None if not model.has_mlp else "mlp"},
            "initial_tokens": ("x_i(0) = x0_i / |x0_i| (tokens on the unit sphere)"
                               if model.on_sphere else "x_i(0) = x0_i")}


def symmetry_text(group) -> list[dict]:
    """The symmetries an enclosure used, as ``{"S", "tokens"}`` pairs (duplicate tokens tied
    as transpositions with ``S = I``)."""
    if group is None:
        return []
    out = [{"S": g.matrix.tolist(), "tokens": list(g.tokens)} for g in group.elements]
    if group.tie_duplicates:
        identity = np.eye(group.d, dtype=int).tolist()
        for members in group.duplicate_classes:
            for a, b in zip(members, members[1:], strict=False):
                tokens = list(range(group.n))
                tokens[a], tokens[b] = b, a
                out.append({"S": identity, "tokens": tokens})
    return out


def lemma_for(model) -> str | None:
    """The lemma that can trap this model's dynamics, or ``None``."""
    if model.rescaled and not model.departures():
        V = model.V
        lam = V[0, 0]
        if lam > 0 and all(V[a, b] == (lam if a == b else 0) for a in range(model.d)
                           for b in range(model.d)):
            return leader_map.ID
        return good_triple.ID
    if model.continuous_tokens and model.on_sphere and model.single_head \
            and (model.softmax or model.unnormalised_attention) and not model.has_mlp \
            and model.full_mask:
        V = model.V
        c = V[0, 0]
        if c > 0 and all(V[a, b] == (c if a == b else 0) for a in range(model.d)
                         for b in range(model.d)):
            return sphere_consensus.ID
    return None


def _dyadic_up(x: float, bits: int = 8) -> Fraction:
    if not x > 0 or not math.isfinite(x):
        return Fraction(0)
    e = math.floor(math.log2(x)) - bits + 1
    return Fraction(math.ceil(x / 2.0 ** e)) * Fraction(2) ** e


def _document(instance, enclosure, t1: Fraction, variable: str, text: list, lemma: str,
              parameters: dict, report: LemmaReport) -> dict:
    return {"schema": SCHEMA, "instance": instance_text(instance),
            "symmetries": symmetry_text(enclosure.group),
            "enclosure": {"t1": str(t1), "variable": variable, "tokens": text,
                          "bits": enclosure.bits, **{k: v for k, v in enclosure.describe().items()
                                                     if k in ("method", "steps", "radius")}},
            "lemma": {"id": lemma, "parameters": parameters},
            "inequalities": [q.to_dict() for q in report.inequalities],
            "conclusions": report.conclusions}


# ----------------------------------------------------------------------------------- leader map
def _leader_map_of(balls, B, pinned: set) -> list | None:
    """The hardmax leader of every token from the midpoints (following argmax chains to a
    token that attends to itself), or ``None`` when a chain does not end at such a token."""
    n, d = balls.nrows(), balls.ncols()
    z = np.array([[float(balls[i, a].mid()) for a in range(d)] for i in range(n)])
    S = z @ B @ z.T
    free = [j for j in range(n) if j not in pinned]
    target = {i: max(free, key=lambda j, i=i: S[i, j]) for i in free}
    out = []
    for i in range(n):
        if i in pinned:
            out.append(None)
            continue
        seen, j = set(), i
        while target[j] != j:
            if j in seen:
                return None
            seen.add(j)
            j = target[j]
        out.append(j)
    return out


def _leader_map(inst_exact, t1, balls, pinned) -> tuple[dict, LemmaReport] | tuple[None, str]:
    B = np.array([[float(v) for v in row] for row in inst_exact.B])
    leader_of = _leader_map_of(balls, B, pinned)
    if leader_of is None:
        return None, "the argmax chains do not end at self-attending leaders yet."
    rho = delta = Fraction(1, 2 ** 200)
    report = None
    for _ in range(6):
        parameters = {"leader_of": leader_of, "rho": str(rho), "delta": str(delta)}
        report = leader_map.check(inst_exact, t1, balls, pinned, parameters)
        failed = {q.name: q for q in report.failed()}
        if not failed:
            return parameters, report
        if "g_in" in failed or "g_out" in failed:
            break
        need_rho = float((arb(float(rho)) - _margin(report, "rho")).upper())
        need_delta = float((arb(float(delta)) - _margin(report, "delta")).upper())
        rho = max(rho, _dyadic_up(4 * need_rho))
        delta = max(delta, _dyadic_up(4 * need_delta))
    why = "; ".join(f"{q.name} fails (margin {float(q.margin.mid()):.3g})"
                    for q in report.failed()) if report else "no report"
    return None, f"the leader map at t = {float(t1):.4g} does not trap: {why}"


def _margin(report: LemmaReport, name: str) -> arb:
    return next(q.margin for q in report.inequalities if q.name == name)


# ----------------------------------------------------------------------------------- good triple
def _real_basis(V: np.ndarray) -> np.ndarray:
    """Columns: a real eigenbasis of ``V`` (real and imaginary parts for a complex pair),
    the leading eigenvector first."""
    values, vectors = np.linalg.eig(V)
    order = np.argsort(-values.real)
    columns, used = [], set()
    for k in order:
        if k in used:
            continue
        v = vectors[:, k]
        if abs(values[k].imag) > 1e-12:
            partner = min((j for j in order if j not in used and j != k),
                          key=lambda j: abs(values[j] - values[k].conjugate()))
            used.update({k, partner})
            columns += [v.real, v.imag]
        else:
            used.add(k)
            columns.append(v.real)
    return np.array(columns).T


def _good_triple(inst_exact, t1, balls, symmetries) -> tuple[dict, LemmaReport] | tuple[None, str]:
    V = np.array([[float(v) for v in row] for row in inst_exact.V])
    T = _real_basis(V)
    try:
        _, _, phi_star = good_triple.leading_eigenpair(inst_exact.V)
    except CheckFailure as exc:
        return None, str(exc)
    alpha = [sum((p * balls[i, a] for a, p in enumerate(phi_star)), arb(0))
             for i in range(inst_exact.n)]
    zero = [i for i, a in enumerate(alpha) if a.contains(0)]
    parameters = {"T": [[str(Fraction(float(v))) for v in row] for row in T], "zero": zero}
    for name, sign in (("plus", 1), ("minus", -1)):
        side = [float((sign * a).lower()) for i, a in enumerate(alpha) if i not in zero
                and (sign * a) > 0]
        if side:
            parameters[f"mu_{name}"] = str(Fraction(min(side) * (1 - 2.0 ** -20)))
    try:
        report = good_triple.check(inst_exact, t1, balls, symmetries, parameters)
    except CheckFailure as exc:
        return None, str(exc)
    if report.holds:
        return parameters, report
    why = "; ".join(f"{q.name} fails (margin {float(q.margin.mid()):.3g})"
                    for q in report.failed())
    return None, f"the split by the sign of φ1* at t = {float(t1):.4g} does not trap: {why}"


# ----------------------------------------------------------------------------------- dispatch
def try_lemma(lemma: str, instance, enclosure, t1: Fraction) -> tuple[dict | None, str]:
    """The certificate document of ``lemma`` at the mark ``t1`` of ``enclosure`` (without its
    facts), or ``(None, why not)``."""
    text = {"instance": instance_text(instance)}
    inst_exact = read_instance(text)
    symmetries = check_symmetries(inst_exact, symmetry_text(enclosure.group))
    with ctx.workprec(enclosure.bits):
        variable = "x" if lemma == sphere_consensus.ID else "z"
        # the lemma reads the balls exactly as the checker will read them back from the text
        text = matrix_text(enclosure.x_at(t1) if variable == "x" else enclosure.z_at(t1))
        balls = ball_matrix(text)
        if lemma == sphere_consensus.ID:
            try:
                report = sphere_consensus.check(inst_exact, t1, balls, {})
            except CheckFailure as exc:
                return None, str(exc)
            parameters = {}
            if not report.holds:
                return None, (f"at t = {float(t1):.4g} some pair of tokens is not certified "
                              "less than 90° apart.")
        else:
            if lemma == leader_map.ID:
                parameters, report = _leader_map(inst_exact, t1, balls,
                                                 pinned_tokens(inst_exact, symmetries))
            else:
                parameters, report = _good_triple(inst_exact, t1, balls, symmetries)
            if parameters is None:
                return None, report
    return _document(instance, enclosure, t1, variable, text, lemma, parameters, report), ""
