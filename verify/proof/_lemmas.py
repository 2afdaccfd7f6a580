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
from flint import arb, arb_mat, ctx
from scipy.linalg import expm, schur

from verify.exact.checks import identity_multiple
from verify.lemmas import (
    equilibrium,
    good_triple,
    hyperplane_drift,
    leader_map,
    masked_cap,
    masked_token,
    power_decay,
    sphere_consensus,
)
from verify.lemmas._balls import CheckFailure, LemmaReport, ball_matrix, matrix_text, parse_ball
from verify.lemmas._instance import check_symmetries, pinned_tokens, read_instance
from verify.lemmas.checker import SCHEMA

__all__ = ["instance_text", "symmetry_text", "try_lemma", "lemmas_for", "lemma_for",
           "masked_document", "masked_tokens", "cap_parts", "cap_document_at_start"]


def _strings(matrix) -> list:
    return [[str(Fraction(v)) for v in row] for row in matrix]


def instance_text(instance) -> dict:
    """The exact instance as a certificate writes it (rationals as ``"p/q"``)."""
    model = instance.model
    head = model.heads[0]
    variant = model.describe()  # the model's own plain summary (the mask: "adjacency")
    mask = model.mask_for(instance.n)
    graph = {} if model.full_mask or model.causal_mask else \
        {"mask_matrix": [[int(v) for v in row] for row in mask]}  # the graph mask itself
    return {"name": instance.name, "V": _strings(head.V), "Q": _strings(head.Q),
            "K": _strings(head.K), "x0": _strings(instance.x0),
            "model": {**{key: variant[key] for key in ("form", "attention", "mask",
                                                        "normalisation", "heads", "beta")},
                      "mlp": None if not model.has_mlp else "mlp", **graph},
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


def lemmas_for(model) -> tuple[str, ...]:
    """The lemmas that can trap this model's dynamics, in the order they are tried (the
    cheaper first: on the causal sphere with ``V = cI`` sphere consensus holds as soon as the
    tokens lie within 90°, the equilibrium's contraction ball only much later); empty when
    none applies.

    >>> from verify.model import Model
    >>> lemmas_for(Model(V=[[1, 0], [0, 1]], form="x", normalisation="sphere", mask="causal"))
    ('masked-cap', 'sphere-consensus', 'equilibrium')
    >>> lemmas_for(Model(V=[[1, 2], [0, 1]], form="x", normalisation="sphere"))
    ()
    >>> lemmas_for(Model(V=[[1, 0], [0, -1]]))  # the rescaled form by default
    ('good-triple', 'hyperplane-drift')
    """
    if _power_decay_applies(model):
        return (power_decay.ID,)
    if model.rescaled and not model.departures():
        lam = identity_multiple(model.V)
        if lam is not None and lam > 0:
            return (leader_map.ID,)
        return (good_triple.ID, hyperplane_drift.ID)
    found = (masked_cap.ID,) if _masked_cap_applies(model) else ()
    if model.continuous_tokens and model.on_sphere and model.single_head \
            and (model.softmax or model.unnormalised_attention) and not model.has_mlp \
            and (model.full_mask or model.causal_mask):
        c = identity_multiple(model.V)
        if c is not None and c > 0:
            found += (sphere_consensus.ID,)
    if _equilibrium_applies(model):
        found += (equilibrium.ID,)
    return found


def lemma_for(model) -> str | None:
    """The first lemma :func:`lemmas_for` tries, or ``None``."""
    return next(iter(lemmas_for(model)), None)


def cap_parts(model, n: int | None = None) -> list[tuple[int, list[int]]] | None:
    """The parts ``(root, set)`` of lemma ``masked-cap`` that cover every token, on the sphere
    with one softmax head and ``V = cI``, ``c > 0``: under a causal mask one part (token 0 and
    every token); under a graph mask one part per token that attends only to itself (a root),
    holding the tokens that attend to it — each token must attend to exactly one root and each
    part be closed. ``None`` when there is no such cover (``n`` is needed for a causal mask).

    >>> from verify.model import Model
    >>> cap_parts(Model(V=[[1, 0], [0, 1]], form="x", normalisation="sphere",
    ...                 mask=[[1, 0, 0], [1, 1, 0], [0, 0, 1]]))
    [(0, [0, 1]), (2, [2])]
    """
    if not (model.continuous_tokens and model.on_sphere and model.single_head and model.softmax
            and not model.has_mlp) or model.full_mask:
        return None
    c = identity_multiple(model.V)
    if c is None or not c > 0:
        return None
    if model.causal_mask:
        return None if n is None else [(0, list(range(n)))]
    mask = np.asarray(model.mask, dtype=bool)
    roots = [r for r in range(len(mask)) if mask[r].sum() == 1 and mask[r, r]]
    parts = {r: [] for r in roots}
    for i in range(len(mask)):
        seen = [r for r in roots if mask[i, r]]
        if len(seen) != 1:
            return None
        parts[seen[0]].append(i)
    for S in parts.values():
        if mask[S][:, [j for j in range(len(mask)) if j not in S]].any():
            return None  # a token of the part attends outside it
    return [(r, S) for r, S in parts.items()]


def _masked_cap_applies(model) -> bool:
    return model.causal_mask and cap_parts(model, 1) is not None or \
        not model.causal_mask and cap_parts(model) is not None


def _power_decay_applies(model) -> bool:
    """The plain model with ``V = -μI``, ``μ > 0``, and a symmetric ``B`` whose Gershgorin
    lower bound is positive (lemma ``power-decay``)."""
    if model.departures() or not (model.continuous_tokens or model.rescaled):
        return False
    c = identity_multiple(model.V)
    if c is None or not c < 0:
        return False
    b = power_decay.gershgorin_lower([[Fraction(v) for v in row] for row in model.B])
    return b is not None and b > 0


def _equilibrium_applies(model) -> bool:
    """Tokens on the sphere, one softmax head, ``V = cI`` (``c > 0``), a causal mask (lemma
    ``equilibrium``: token 0 is frozen)."""
    if not (model.continuous_tokens and model.on_sphere and model.single_head and model.softmax
            and not model.has_mlp and model.causal_mask):
        return False
    c = identity_multiple(model.V)
    return c is not None and c > 0


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
    why = _failures(report) if report else "no report"
    return None, f"the leader map at t = {float(t1):.4g} does not trap: {why}"


def _failures(report: LemmaReport) -> str:
    """The failed inequalities of a report, with their margins."""
    return "; ".join(f"{q.name} fails (margin {float(q.margin.mid()):.3g})"
                     for q in report.failed())


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
    why = _failures(report)
    return None, f"the split by the sign of φ1* at t = {float(t1):.4g} does not trap: {why}"


# ----------------------------------------------------------------------------------- drift
def _hyperplane_drift(inst_exact, t1, balls, symmetries) -> tuple[dict, LemmaReport] | \
        tuple[None, str]:
    """The good triple's parameters, then on each side of two tokens or more the leader that
    every token of the side prefers for large t (the largest ``±φ1ᵀB x_j``, from the
    midpoints) and the smallest allowance ``r`` (of a few) that the check accepts."""
    parameters, report = _good_triple(inst_exact, t1, balls, symmetries)
    if parameters is None:
        return None, report
    phi = np.array([float(v.mid()) for v in good_triple.leading_eigenpair(inst_exact.V)[1]])
    V = np.array([[float(v) for v in row] for row in inst_exact.V])
    B = np.array([[float(v) for v in row] for row in inst_exact.B])
    n, d = balls.nrows(), balls.ncols()
    z = np.array([[float(balls[i, a].mid()) for a in range(d)] for i in range(n)])
    pull = (expm(float(t1) * V) @ z.T).T @ B.T @ phi  # φ1ᵀ B x_j
    leaders = {}
    for name, sign in (("plus", 1), ("minus", -1)):
        members = report.conclusions[name]
        if len(members) >= 2:
            leaders[name] = max(members, key=lambda j, s=sign: s * pull[j])
    if not leaders:
        return None, "no trapped side has two tokens: there is no follower."
    r = Fraction(1, 2 ** 100)
    for _ in range(6):
        candidate = {**parameters, "leaders": leaders, "r": str(r)}
        try:
            report = hyperplane_drift.check(inst_exact, t1, balls, symmetries, candidate)
        except CheckFailure as exc:
            return None, str(exc)
        failed = {q.name for q in report.failed()}
        if not failed:
            return candidate, report
        if failed != {name for name in failed if name.startswith("offsets-")}:
            break
        need = max(float((arb(float(r)) - _margin(report, name)).upper()) for name in failed)
        r = max(r, _dyadic_up(4 * need))
    return None, f"the leaders at t = {float(t1):.4g} do not trap the followers: " \
                 f"{_failures(report)}"


# ----------------------------------------------------------------------------------- power decay
def _power_decay(inst_exact, t1, balls) -> tuple[dict, LemmaReport] | tuple[None, str]:
    """``R`` from the energy at ``t1`` (a little above :math:`g^{-1}(L(t_1))`)."""
    try:
        probe = power_decay.check(inst_exact, t1, balls, {"R": "1"})
        L1 = float(parse_ball(probe.conclusions["L1"]).upper()) if probe.conclusions else None
        if L1 is None:
            return None, "; ".join(q.name for q in probe.failed()) or "no energy bound"
        parameters = {"R": str(power_decay.radius_for(L1))}
        report = power_decay.check(inst_exact, t1, balls, parameters)
    except CheckFailure as exc:
        return None, str(exc)
    if report.holds:
        return parameters, report
    why = _failures(report)
    return None, f"the energy bound at t = {float(t1):.4g} does not hold: {why}"


# ----------------------------------------------------------------------------------- equilibrium
def _exact_float(v: arb) -> Fraction:
    man, exp = v.mid().man_exp()
    return Fraction(int(man)) * Fraction(2) ** int(exp)


def _contracting_basis(J: np.ndarray) -> np.ndarray:
    """Columns in which ``J``'s logarithmic norm (∞) is close to its spectral abscissa: a real
    eigenbasis (a conjugate pair as the real and imaginary parts of one eigenvector) when the
    spectrum is (nearly) real and the basis well conditioned, else the real Schur basis scaled
    by ``η^b`` on its ``b``-th diagonal block (which shrinks the part above the blocks)."""
    values, vectors = np.linalg.eig(J)
    columns, k = [], 0
    while k < len(values):  # LAPACK returns a conjugate pair as two adjacent columns
        if values[k].imag != 0 and k + 1 < len(values):
            columns += [vectors[:, k].real, vectors[:, k].imag]
            k += 2
        else:
            columns.append(vectors[:, k].real)
            k += 1
    T = np.array(columns).T
    # nearly real (a repeated real eigenvalue comes back with tiny imaginary parts)
    if np.max(np.abs(values.imag)) <= 1e-6 * (1 + np.max(np.abs(values))) and \
            np.linalg.cond(T) < 1e6:
        return T / np.max(np.abs(T), axis=0)
    S, Z = schur(J, output="real")
    block = np.cumsum([1] + [0 if S[k, k - 1] != 0 else 1 for k in range(1, len(S))])
    across = block[None, :] > block[:, None]  # entries above the diagonal blocks
    upper = float(np.max(np.abs(S[across]), initial=0.0))
    eta = min(1.0, max(1e-3, 0.05 * float(np.min(np.abs(np.diag(S)))) / max(upper, 1e-300)))
    return Z * eta ** (block - 1)


def _equilibrium(inst_exact, t1, balls) -> tuple[dict, LemmaReport] | tuple[None, str]:
    """:func:`_propose_equilibrium`, with a failure of its floating-point linear algebra as a
    reason."""
    try:
        return _propose_equilibrium(inst_exact, t1, balls)
    except (np.linalg.LinAlgError, ValueError, ZeroDivisionError) as exc:
        return None, f"no equilibrium proposed at t = {float(t1):.4g}: {exc}"


def _propose_equilibrium(inst_exact, t1, balls) -> tuple[dict, LemmaReport] | tuple[None, str]:
    """Newton from the state's midpoints to the centre, ``T`` a real eigenbasis of the
    Jacobian there, then the smallest box and radius (of a few) that the check accepts."""
    n, d = inst_exact.n, inst_exact.d
    frozen = equilibrium.frozen_tokens(inst_exact)
    moving = [k for k in range(n) if k not in frozen]
    if not frozen or not moving:
        return None, "no frozen token, or nothing moves."
    rows = {i: equilibrium.initial_row(inst_exact, i) for i in frozen}
    u = [arb(balls[k, a].mid()) for k in moving for a in range(d)]

    def at(vector):
        X = [rows.get(i) for i in range(n)]
        for p, k in enumerate(moving):
            X[k] = vector[p * d:(p + 1) * d]
        return X

    try:
        for _ in range(12):
            F = [v for k in moving for v in equilibrium.field(inst_exact, at(u))[k]]
            J = equilibrium.jacobian(inst_exact, at(u), moving)
            J = arb_mat([[arb(v.mid()) for v in row] for row in J.tolist()])
            step = J.solve(arb_mat([[arb(v.mid())] for v in F]))
            u = [arb((v - step[p, 0]).mid()) for p, v in enumerate(u)]
        J = equilibrium.jacobian(inst_exact, at(u), moving)
        if not all(v.is_finite() for v in u):
            raise ValueError("the iterates are not finite")
    except (ZeroDivisionError, ValueError) as exc:
        return None, f"Newton's method fails near the state at t = {float(t1):.4g}: {exc}"
    Jf = np.array([[float(v.mid()) for v in row] for row in J.tolist()])
    if not np.all(np.isfinite(Jf)) or np.max(np.linalg.eigvals(Jf).real) >= 0:
        return None, (f"the equilibrium near the state at t = {float(t1):.4g} is not "
                      "linearly stable.")
    T = _contracting_basis(Jf)
    state = np.array([float(balls[k, a].mid()) for k in moving for a in range(d)])
    centre = np.array([float(v.mid()) for v in u])
    delta = float(np.max(np.abs(np.linalg.solve(T, state - centre))))
    centre_text = [[str(_exact_float(u[p * d + a])) for a in range(d)]
                   for p in range(len(moving))]
    T_text = [[str(Fraction(float(v))) for v in row] for row in T]
    report = None
    for eps in (2.0 ** -80, 2.0 ** -50, 2.0 ** -30):
        for grow in (1.25, 2.0, 4.0):
            r = _dyadic_up(grow * delta + 4 * eps * float(np.abs(np.linalg.inv(T)).sum()))
            parameters = {"centre": centre_text, "box": str(Fraction(eps)),
                          "radius": str(r), "T": T_text}
            try:
                report = equilibrium.check(inst_exact, t1, balls, parameters)
            except CheckFailure as exc:
                return None, str(exc)
            if report.holds:
                return parameters, report
            if "krawczyk" in {q.name for q in report.failed()}:
                break
    why = _failures(report) if report else "no report"
    return None, f"the equilibrium at t = {float(t1):.4g} does not trap the state: {why}"


# ----------------------------------------------------------------------------------- masked cap
def _masked_cap(instance, inst_exact, t1, balls) -> tuple[dict, LemmaReport] | tuple[None, str]:
    """The parts of :func:`cap_parts` (one: the root every token attends to, the set of every
    token)."""
    parts = cap_parts(instance.model, inst_exact.n)
    if parts is None:
        return None, "the tokens are not covered by closed sets, each attending to one token " \
                     "that attends only to itself."
    parameters = {"root": parts[0][0], "set": parts[0][1]} if len(parts) == 1 else \
        {"parts": [{"root": r, "set": S} for r, S in parts]}
    try:
        report = masked_cap.check(inst_exact, t1, balls, parameters)
    except CheckFailure as exc:
        return None, str(exc)
    if report.holds:
        return parameters, report
    return None, (f"at t = {float(t1):.4g} some token is not certified less than 90° from "
                  f"its root's start: {_failures(report)}")


def cap_document_at_start(instance) -> tuple[dict | None, str]:
    """The certificate document of lemma ``masked-cap`` at ``t1 = 0`` on balls around the exact
    initial tokens ``x0_i/|x0_i|`` (no enclosure: the checker verifies that the balls contain
    them), for any number of tokens; or ``(None, why not)``."""
    if cap_parts(instance.model, instance.n) is None:
        return None, "lemma masked-cap does not apply to this model"
    inst_exact = read_instance({"instance": instance_text(instance)})
    with ctx.workprec(MASKED_BITS):
        text = matrix_text(arb_mat([masked_cap.unit_token(inst_exact, i)
                                    for i in range(inst_exact.n)]))
        parameters, report = _masked_cap(instance, inst_exact, Fraction(0), ball_matrix(text))
    if parameters is None:
        return None, report
    return {"schema": SCHEMA, "instance": instance_text(instance), "symmetries": [],
            "enclosure": {"t1": "0", "variable": "x", "tokens": text, "bits": MASKED_BITS,
                          "method": "none: balls around the exact initial tokens"},
            "lemma": {"id": masked_cap.ID, "parameters": parameters},
            "inequalities": [q.to_dict() for q in report.inequalities],
            "conclusions": report.conclusions}, ""


# ----------------------------------------------------------------------------------- dispatch
def try_lemma(lemma: str, instance, enclosure, t1: Fraction) -> tuple[dict | None, str]:
    """The certificate document of ``lemma`` at the mark ``t1`` of ``enclosure`` (without its
    facts), or ``(None, why not)``."""
    text = {"instance": instance_text(instance)}
    inst_exact = read_instance(text)
    symmetries = check_symmetries(inst_exact, symmetry_text(enclosure.group))
    with ctx.workprec(enclosure.bits):
        variable = "x" if lemma in (sphere_consensus.ID, power_decay.ID, equilibrium.ID,
                                    masked_cap.ID) else "z"
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
        elif lemma == masked_cap.ID:
            parameters, report = _masked_cap(instance, inst_exact, t1, balls)
            if parameters is None:
                return None, report
        elif lemma in (power_decay.ID, equilibrium.ID):
            build = _power_decay if lemma == power_decay.ID else _equilibrium
            parameters, report = build(inst_exact, t1, balls)
            if parameters is None:
                return None, report
        else:
            if lemma == leader_map.ID:
                parameters, report = _leader_map(inst_exact, t1, balls,
                                                 pinned_tokens(inst_exact, symmetries))
            elif lemma == hyperplane_drift.ID:
                parameters, report = _hyperplane_drift(inst_exact, t1, balls, symmetries)
            else:
                parameters, report = _good_triple(inst_exact, t1, balls, symmetries)
            if parameters is None:
                return None, report
    return _document(instance, enclosure, t1, variable, text, lemma, parameters, report), ""


# ----------------------------------------------------------------------------------- masked token
#: Bits of the balls the masked-token lemma isolates roots in (its data are exact).
MASKED_BITS = 128


def masked_tokens(instance) -> list[int]:
    """The tokens whose mask row is themselves alone (the causal first token; a graph mask's
    rows with their one 1 on the diagonal); none under full attention."""
    mask = instance.model.mask_for(instance.n)
    if mask is None:
        return []
    return [k for k in range(instance.n) if mask[k, k] and int(mask[k].sum()) == 1]


def masked_document(instance, token: int = 0) -> tuple[dict | None, str]:
    """The certificate document of the masked-token lemma for ``token`` (a token that attends
    only to itself) on the exact initial data (``t1 = 0``, no enclosure), or ``(None, why
    not)``: the model is not one the lemma is about, or the closed form decides nothing."""
    if token not in masked_tokens(instance):
        return None, f"token {token + 1} does not attend only to itself"
    text = {"instance": instance_text(instance)}
    parameters = {"token": token} if token else {}  # the first token: as before, no parameter
    try:
        inst_exact = read_instance(text)
        with ctx.workprec(MASKED_BITS):
            report = masked_token.check(inst_exact, parameters)
    except CheckFailure as exc:
        return None, str(exc)
    if not report.holds:
        return None, f"the closed form of token {token + 1} decides nothing (a sign is undecided)"
    return {"schema": SCHEMA, **text, "symmetries": [],
            "enclosure": {"t1": "0", "variable": "exact", "bits": MASKED_BITS,
                          "tokens": text["instance"]["x0"],
                          "method": "none: the lemma reads the exact initial tokens"},
            "lemma": {"id": masked_token.ID, "parameters": parameters},
            "inequalities": [q.to_dict() for q in report.inequalities],
            "conclusions": report.conclusions}, ""
