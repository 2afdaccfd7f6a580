r"""Claim-level facts derived from a lemma's conclusions, re-checked by the certificate checker.

A certificate proves a claim's conclusion on an instance through *facts*: each names a
statement about all :math:`t \ge t_1` that follows from the lemma's conclusions plus, at most, an
exact property of the instance. :data:`FACTS` maps each name to its check
``check(inst, lemma_id, conclusions, fact) -> (holds, why)``.

Only python-flint and the standard library are imported.
"""

from __future__ import annotations

from fractions import Fraction

from flint import arb

from verify.lemmas import masked_token
from verify.lemmas._balls import exact, parse_ball, rational

__all__ = ["FACTS", "check_fact", "positive_definite"]


def positive_definite(B: list) -> bool:
    """Exact test that a rational matrix is symmetric positive definite (leading minors by
    Gaussian elimination in rationals)."""
    d = len(B)
    if any(B[a][b] != B[b][a] for a in range(d) for b in range(d)):
        return False
    M = [list(row) for row in B]
    for k in range(d):
        if M[k][k] <= 0:
            return False
        for r in range(k + 1, d):
            f = M[r][k] / M[k][k]
            M[r] = [x - f * y for x, y in zip(M[r], M[k], strict=True)]
    return True


def _limits(conclusions: dict) -> list:
    return [None if row is None else [parse_ball(v) for v in row]
            for row in conclusions["limits"]]


def _need(lemma: str, *ids: str) -> tuple[bool, str] | None:
    if lemma not in ids:
        return False, f"this fact is derived from lemma {' or '.join(ids)}, not {lemma}."
    return None


def _cap_parts(conclusions) -> list[tuple[int, list]]:
    """The parts ``(root, set)`` of lemma ``masked-cap``'s conclusions."""
    if "parts" in conclusions:
        return [(int(q["root"]), list(q["set"])) for q in conclusions["parts"]]
    return [(int(conclusions["root"]), list(conclusions["set"]))]


def _whole_cap(inst, lemma, conclusions, parts: int | None = 1) -> tuple[bool, str] | None:
    """``None`` when lemma ``masked-cap`` covers every token (in ``parts`` parts; ``None``: in
    any number), else why it does not."""
    if lemma != "masked-cap":
        return None
    found = _cap_parts(conclusions)
    if sorted(i for _, S in found for i in S) != list(range(inst.n)):
        return False, "the cap's sets do not cover every token."
    if parts is not None and len(found) != parts:
        return False, f"the cap has {len(found)} parts, not {parts}."
    return None


def converge(inst, lemma, conclusions, fact):
    """Every token converges (to a point; on the sphere: all to one point)."""
    if lemma in ("leader-map", "sphere-consensus"):
        return True, "every token converges (the lemma's conclusion)."
    if lemma == "masked-cap":
        roots = ", ".join(f"x_{r + 1}(0)" for r, _ in _cap_parts(conclusions))
        return _whole_cap(inst, lemma, conclusions, None) or \
            (True, f"every token converges, to {roots} (the lemma's conclusion).")
    if lemma == "good-triple":
        return True, "every φ1*(z_i) converges (the lemma's conclusion)."
    return False, f"lemma {lemma} does not give convergence."


def converge_phi1(inst, lemma, conclusions, fact):
    """Every :math:`\\varphi_1^*(z_i)` converges."""
    if lemma in ("good-triple", "leader-map"):
        return True, "every φ1*(z_i) converges."
    return False, f"lemma {lemma} says nothing about φ1*."


def limits_in_S(inst, lemma, conclusions, fact):
    """Every limit is a point of the set 𝒮 of Theorem 3.1: the leader map's limits satisfy
    :math:`p_a^\\top B (p_a - p_b) \\ge g_{out} > 0` against every other limit and the pinned
    tokens sit at :math:`0 \\in \\mathcal S`; with :math:`B \\succ 0` this is
    :math:`\\|A p_a\\|^2 > \\langle A p_a, A p_b\\rangle`, so :math:`p_a` is a vertex of
    :math:`\\mathcal K = \\operatorname{conv}\\{p\\}` and lies in :math:`\\mathcal S`."""
    wrong = _need(lemma, "leader-map")
    if wrong:
        return wrong
    if not positive_definite(inst.B):
        return False, "βQᵀK is not certified symmetric positive definite."
    return True, "each limit beats every other limit in its own score (g_out > 0): it is a " \
                 "vertex of 𝒦 and a point of 𝒮; pinned tokens stay at 0 ∈ 𝒮."


def leaders_extreme(inst, lemma, conclusions, fact):
    """(``d = 1``) the leaders are the extreme tokens (the smallest and largest ``x0``)."""
    wrong = _need(lemma, "leader-map")
    if wrong:
        return wrong
    values = [row[0] for row in inst.x0]
    extreme = {values.index(min(values)), values.index(max(values))}
    leaders = {a for a in conclusions["leader_of"] if a is not None}
    if inst.d != 1 or not leaders <= extreme:
        return False, f"leaders {sorted(leaders)} are not among the extreme tokens " \
                      f"{sorted(extreme)}."
    return True, f"every decided row tends to the row of an extreme token {sorted(leaders)}."


def free_rows(inst, lemma, conclusions, fact):
    """At most ``fact["at_most"]`` rows of the attention stay free (the pinned tokens')."""
    wrong = _need(lemma, "leader-map")
    if wrong:
        return wrong
    count = len(conclusions["pinned"])
    limit = int(fact["at_most"])
    return count <= limit, f"{count} free row(s) (pinned tokens), at most {limit}."


def doubly_exponential(inst, lemma, conclusions, fact):
    """The non-free rows tend to Boolean rows doubly exponentially:
    :math:`1 - P_{i\\ell}(t) \\le (n-1) e^{-\\min(U, W) e^{\\lambda (t - t_1)}}`, so
    :math:`\\log(-\\log(1 - P_{i\\ell}))` grows at least at the rate :math:`\\lambda`, which
    must be ``>= fact["rate_at_least"]``."""
    wrong = _need(lemma, "leader-map")
    if wrong:
        return wrong
    bounds = [parse_ball(conclusions[k]) for k in ("U", "W") if conclusions.get(k)]
    lam, wanted = rational(conclusions["lambda"]), rational(fact.get("rate_at_least", 0))
    ok = all(b > 0 for b in bounds) and lam >= wanted
    return ok, (f"1 - P_iℓ(t) <= (n-1) exp(-min(U, W) e^{{λ(t - t1)}}) with U, W > 0: "
                f"log(-log(1 - P_iℓ)) grows at rate >= λ = {lam} (>= {wanted}).")


def limit_signs(inst, lemma, conclusions, fact):
    """(``d = 1``) each listed token's limit of :math:`z_i` has the listed sign."""
    wrong = _need(lemma, "leader-map")
    if wrong:
        return wrong
    limits = _limits(conclusions)
    for i, sign in zip(fact["tokens"], fact["signs"], strict=True):
        if limits[i] is None or not (sign * limits[i][0]) > 0:
            return False, f"the limit of z_{i} is not certified of sign {sign}."
    return True, "γ_i = lim z_i has the sign of x_i(0) for the listed tokens."


def bounded_at_most(inst, lemma, conclusions, fact):
    """At most ``fact["at_most"]`` token stays bounded, and it tends to 0: every other limit
    :math:`\\gamma_i = \\lim z_i` is certified nonzero; the bounded ones are pinned at 0."""
    wrong = _need(lemma, "leader-map")
    if wrong:
        return wrong
    limits = _limits(conclusions)
    for i, row in enumerate(limits):
        if row is not None and not any(not v.contains(0) for v in row):
            return False, f"γ_{i} = lim z_{i} is not certified nonzero."
    count = len(conclusions["pinned"])
    return count <= int(fact["at_most"]), f"{count} token(s) pinned at 0 (x ≡ 0), every " \
                                          "other γ_i ≠ 0."


def order_after(inst, lemma, conclusions, fact):
    """(``d = 1``) the order of the tokens is kept for all :math:`t \\ge t_1`: tokens of
    different clusters stay in ordered, disjoint intervals :math:`R_a`; within a cluster
    :math:`z_j - z_k = e^{-\\lambda s}(y_j(t_1) - y_k(t_1) + r_j - r_k)` with
    :math:`|r| \\le \\rho`, so offsets more than :math:`2\\rho` apart keep their order."""
    wrong = _need(lemma, "leader-map")
    if wrong:
        return wrong
    if inst.d != 1:
        return False, "the order is about d = 1."
    order = sorted(range(inst.n), key=lambda i: inst.x0[i][0])
    leader_of = conclusions["leader_of"]
    regions = {int(a): parse_ball(r[0]) for a, r in conclusions["regions"].items()}
    rho = exact(rational(conclusions["rho"]))
    offsets = {int(k): parse_ball(v) for k, v in fact["offsets"].items()}
    for i, j in zip(order, order[1:], strict=False):
        a, b = leader_of[i], leader_of[j]
        lo = arb(0) if a is None else regions[a]
        hi = arb(0) if b is None else regions[b]
        if a != b or a is None:
            if not lo.upper() < hi.lower():
                return False, f"tokens {i} and {j} are not in ordered, disjoint regions."
            continue
        yi, yj = offsets.get(i, arb(0)), offsets.get(j, arb(0))
        if not (yj - yi) > 2 * rho:
            return False, f"the offsets of tokens {i}, {j} are not 2ρ apart."
    return True, "the order of the tokens is kept for all t >= t1."


def consensus(inst, lemma, conclusions, fact):
    """All tokens reach one cluster (consensus)."""
    wrong = _need(lemma, "sphere-consensus", "masked-cap")
    if wrong:
        return wrong
    if lemma == "masked-cap":
        return _whole_cap(inst, lemma, conclusions) or \
            (True, f"1 - min <x_i, x_{_cap_parts(conclusions)[0][0] + 1}(0)> decays "
                   "exponentially: consensus.")
    return True, "1 - min <x_i, x_k> decays exponentially: consensus."


def cap_clusters(inst, lemma, conclusions, fact):
    """The limits form at most ``fact["at_most"]`` points, or exactly ``fact["equal"]``: lemma
    ``masked-cap``'s parts cover every token and each part tends to its root's start; for
    ``equal`` the roots start at pairwise distinct points (exactly)."""
    wrong = _need(lemma, "masked-cap") or _whole_cap(inst, lemma, conclusions, None)
    if wrong:
        return wrong
    roots = [r for r, _ in _cap_parts(conclusions)]
    if "equal" in fact:
        k = int(fact["equal"])
        apart = all(not _same_point(inst, a, b) for a in roots for b in roots if a < b)
        return len(roots) == k and apart, (f"{len(roots)} parts, each tending to its root; "
                                           f"roots at distinct points: {apart} (want {k}).")
    k = int(fact["at_most"])
    return len(roots) <= k, f"{len(roots)} parts, each tending to one point (at most {k})."


def limit_at_root(inst, lemma, conclusions, fact):
    r"""Every token tends to :math:`x_r(0) = x0_r/|x0_r|`, the root ``fact["token"]`` of lemma
    ``masked-cap`` whose set is every token. With ``normalised`` false the claim names
    :math:`x0_r` itself: then :math:`x0_r` must be exactly a unit vector."""
    wrong = _need(lemma, "masked-cap") or _whole_cap(inst, lemma, conclusions)
    if wrong:
        return wrong
    r, root = int(fact.get("token", 0)), _cap_parts(conclusions)[0][0]
    if r != root:
        return False, f"the cap's root is token {root + 1}, not {r + 1}."
    if not fact.get("normalised") and sum(v * v for v in inst.x0[r]) != 1:
        return False, (f"x0_{r + 1} is not exactly a unit vector (the limit is "
                       f"x0_{r + 1}/|x0_{r + 1}|).")
    return True, f"every token tends to x_{r + 1}(0), the token that attends only to itself."


def exponential_consensus(inst, lemma, conclusions, fact):
    r""":math:`\operatorname{diam} x(t) \le C e^{-\lambda t}` for all :math:`t \ge 0` with
    :math:`\lambda = \kappa/2 > 0` and :math:`C = 2 e^{\kappa t_1/2}`: for :math:`t \ge t_1`
    the lemma gives :math:`|x_i - x_k|^2 = 2 - 2\langle x_i, x_k\rangle \le 2(1 - m_1)
    e^{-\kappa(t - t_1)}` with :math:`2(1 - m_1) \le 4`, and before :math:`t_1` unit vectors are
    at most 2 apart. ``rate_above`` (optional, a rational) asks :math:`\lambda >` it."""
    wrong = _need(lemma, "sphere-consensus")
    if wrong:
        return wrong
    kappa, t1 = parse_ball(conclusions["kappa"]), rational(conclusions["t1"])
    lam = kappa / 2
    above = rational(fact.get("rate_above", "0"))
    if not lam > exact(above):
        return False, f"the certified rate κ/2 = {lam} is not > {above}."
    C = 2 * (kappa * exact(t1) / 2).exp()
    return True, (f"diam x(t) <= C e^(-λt) for all t >= 0 with λ = κ/2 >= {lam.lower()} > "
                  f"{above} and C = 2 e^(κ t1/2) <= {C.upper()}.")


def limit_first_token(inst, lemma, conclusions, fact):
    r"""(causal mask) every token tends to :math:`x_1(0) = x0_1/|x0_1|`: the sphere-consensus
    lemma gives one common limit, and token 1 attends only to itself and, with :math:`V = cI`,
    never moves. With ``normalised`` false the claim names :math:`x0_1` itself: then
    :math:`x0_1` must be exactly a unit vector."""
    wrong = _need(lemma, "sphere-consensus")
    if wrong:
        return wrong
    if conclusions.get("mask") != "causal" or inst.mask != "causal":
        return False, "token 1 is fixed only under a causal mask."
    if inst.scalar_value() is None:
        return False, "V is not cI: token 1 may move."
    if not fact.get("normalised") and sum(v * v for v in inst.x0[0]) != 1:
        return False, "x0_1 is not exactly a unit vector (the limit is x0_1/|x0_1|)."
    return True, "consensus, and token 1 never moves: every token tends to x_1(0)."


def hyperplanes(inst, lemma, conclusions, fact):
    """Every :math:`\\varphi_1^*(z_i)` tends to :math:`a`, 0 or :math:`b`:
    :math:`\\operatorname{dist}(z_i(t), H) \\to 0` (Theorem 4.2's hyperplanes)."""
    wrong = _need(lemma, "good-triple")
    if wrong:
        return wrong
    counted = len(conclusions["plus"]) + len(conclusions["minus"]) + len(conclusions["zero"])
    return counted == inst.n, "every token is on a trapped side or held at φ1* = 0."


def phi1_monotone(inst, lemma, conclusions, fact):
    """For all :math:`t \\ge 0`, :math:`\\max_j\\varphi_1^*(z_j)` is non-increasing and
    :math:`\\min_j` non-decreasing (:math:`\\dot\\alpha_i = \\lambda_1\\sum_j P_{ij}(\\alpha_j -
    \\alpha_i)` with :math:`\\lambda_1 > 0`): true for every instance of a good triple."""
    wrong = _need(lemma, "good-triple")
    if wrong:
        return wrong
    return parse_ball(conclusions["lambda1"]) > 0, "λ1 > 0 is a certified eigenvalue with " \
                                                   "left eigenvector φ1*."


def _masked_behaviour(lemma, conclusions, fact) -> tuple[str, str, int]:
    """The behaviour of the masked token in the fact's variable, the variable, and the token
    (the fact's ``token``, default 0, must be the lemma's)."""
    variable = str(fact.get("variable", "x"))
    behaviour = conclusions["behaviour"].get(variable)
    if behaviour is None:
        raise KeyError(f"no behaviour for the variable {variable!r}")
    token = int(conclusions.get("token", 0))
    if int(fact.get("token", 0)) != token:
        raise ValueError(f"the fact is about token {fact.get('token')}, the lemma about {token}")
    return behaviour, variable, token


def token_fixed(inst, lemma, conclusions, fact):
    r"""The masked token :math:`k` never moves: :math:`x_k(t) = x_k(0)` for all
    :math:`t \ge 0` (in the fact's variable), so :math:`|x_k(t) - x0_k| = 0` — on the sphere only
    when :math:`x0_k` is exactly a unit vector (the tokens start at :math:`x0_i/|x0_i|`)."""
    wrong = _need(lemma, "masked-token")
    if wrong:
        return wrong
    behaviour, variable, k = _masked_behaviour(lemma, conclusions, fact)
    if behaviour != "fixed":
        return False, f"token {k + 1} is not fixed in {variable} (it {behaviour})."
    if inst.normalisation == "sphere" and sum(v * v for v in inst.x0[k]) != 1:
        return False, (f"x0_{k + 1} is not exactly a unit vector: the sphere token is "
                       f"x0_{k + 1}/|x0_{k + 1}|.")
    return True, f"{variable}_{k + 1}(t) = {variable}_{k + 1}(0) for all t >= 0 (the exact " \
                 "closed form)."


def token_no_limit(inst, lemma, conclusions, fact):
    """The masked token has no limit (it grows, turns or drifts forever): every statement
    that each token converges is false on this instance."""
    wrong = _need(lemma, "masked-token")
    if wrong:
        return wrong
    behaviour, variable, k = _masked_behaviour(lemma, conclusions, fact)
    if behaviour not in ("grows", "turns", "drifts"):
        return False, f"token {k + 1} is not certified without a limit in {variable} " \
                      f"({behaviour})."
    root = (conclusions.get("roots") or {}).get(variable)
    return True, (f"token {k + 1} {behaviour} forever in {variable} (the root {root} of the "
                  f"local minimal polynomial of x_{k + 1}(0)): it has no limit.")


def _same_point(inst, a: int, b: int) -> bool:
    """Whether tokens ``a`` and ``b`` start at the same point (on the sphere: ``x0_a`` and
    ``x0_b`` positively proportional), exactly."""
    u, v = inst.x0[a], inst.x0[b]
    if inst.normalisation != "sphere":
        return u == v
    dot = sum((p * q for p, q in zip(u, v, strict=True)), Fraction(0))
    return dot > 0 and dot * dot == sum(p * p for p in u) * sum(q * q for q in v)


def fixed_apart(inst, lemma, conclusions, fact):
    r"""The masked token :math:`k` and the token ``fact["other"]`` :math:`b`, which also attends
    only to itself, are both fixed in the fact's variable at distinct points: :math:`|v_k(t) -
    v_b(t)| = |v_k(0) - v_b(0)| > 0` for all :math:`t \ge 0`, so the diameter never tends to 0,
    two tokens have distinct limits, and no formula puts every token at one limit."""
    wrong = _need(lemma, "masked-token")
    if wrong:
        return wrong
    behaviour, variable, k = _masked_behaviour(lemma, conclusions, fact)
    b = int(fact["other"])
    if b == k or not 0 <= b < inst.n or inst.attends(b) != [b]:
        return False, f"token {b + 1} is not another token that attends only to itself."
    other = masked_token.behaviours(inst, masked_token.classify(inst.V, inst.x0[b]))
    if behaviour != "fixed" or other.get(variable) != "fixed":
        return False, (f"tokens {k + 1} and {b + 1} are not both fixed in {variable} "
                       f"({behaviour}, {other.get(variable)}).")
    if _same_point(inst, k, b):
        return False, f"tokens {k + 1} and {b + 1} start at the same point."
    return True, (f"tokens {k + 1} and {b + 1} each attend only to themselves and never move "
                  f"in {variable}, at distinct points: their distance is constant and positive.")


FACTS = {"converge": converge, "converge-phi1": converge_phi1, "limits-in-S": limits_in_S,
         "leaders-extreme": leaders_extreme, "free-rows": free_rows,
         "doubly-exponential": doubly_exponential, "limit-signs": limit_signs,
         "bounded-at-most": bounded_at_most, "order-after-t1": order_after,
         "consensus": consensus, "exponential-consensus": exponential_consensus,
         "hyperplanes": hyperplanes, "phi1-monotone": phi1_monotone,
         "token-fixed": token_fixed, "token-no-limit": token_no_limit,
         "limit-first-token": limit_first_token, "limit-at-root": limit_at_root,
         "fixed-apart": fixed_apart, "cap-clusters": cap_clusters}


def check_fact(inst, lemma: str, conclusions: dict, fact: dict) -> tuple[bool, str]:
    """``(holds, why)`` for one fact of a certificate."""
    name = fact.get("fact")
    if name not in FACTS:
        return False, f"unknown fact {name!r}."
    try:
        return FACTS[name](inst, lemma, conclusions, fact)
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        return False, f"fact {name!r} could not be checked: {exc!r}."


# ------------------------------------------------------------------ power decay (V = -μI collapse)
def collapse(inst, lemma, conclusions, fact):
    """Every token tends to the origin (so all reach one cluster, at 0):
    :math:`\\max_i |x_i(t)| \\le b^{-1/2}(2\\Lambda(t))^{1/4} \\to 0` with :math:`c > 0`."""
    wrong = _need(lemma, "power-decay")
    if wrong:
        return wrong
    c = parse_ball(conclusions["c"])
    return bool(c > 0), f"max_i |x_i(t)| <= b^(-1/2) (2Λ(t))^(1/4) -> 0 (c >= {c.lower()} > 0)."


#: The exponent of the certified algebraic bound of each quantity (lemma ``power-decay``).
POWER_EXPONENTS = {"max-norm": Fraction(1, 2), "max(abs(P - 1/n))": Fraction(1)}


def power_law_decay(inst, lemma, conclusions, fact):
    """The quantity ``fact["quantity"]`` is at most :math:`C (t - t_1 + a)^{-e}` for all
    :math:`t \\ge t_1` (:data:`POWER_EXPONENTS`: :math:`e = 1/2` for the tokens' size,
    :math:`e = 1` for :math:`\\max|P_{ij} - 1/n|`, since :math:`e^{2\\rho} - 1 \\le 2\\rho
    e^{2R}` and :math:`\\rho \\le \\sqrt{2\\Lambda}`), so it decays at least like a power law
    of exponent ``fact["exponent_at_least"]`` (strictly more when ``fact["strict"]``)."""
    wrong = _need(lemma, "power-decay")
    if wrong:
        return wrong
    quantity = fact["quantity"]
    if quantity not in POWER_EXPONENTS:
        return False, f"no certified power law for {quantity!r}."
    e, p = POWER_EXPONENTS[quantity], rational(fact["exponent_at_least"])
    ok = (p < e or (p == e and not fact.get("strict"))) and parse_ball(conclusions["c"]) > 0
    return ok, (f"{quantity} <= C (t - t1 + a)^(-{e}) for all t >= t1: exponent {e} "
                f"{'>' if fact.get('strict') else '>='} {p} {'holds' if ok else 'FAILS'}.")


def max_norm_bound(inst, lemma, conclusions, fact):
    """(:math:`B = bI`) :math:`\\max_i|x_i(t)|^2 \\le \\max(\\max_i|x_i(0)|^2, F)` for all
    :math:`t \\ge 0`, with :math:`F` = ``fact["floor_squared"]`` satisfying :math:`bFe^{bF} \\ge
    (n-1)/e` (:mod:`verify.lemmas.power_decay`, "the bound along the way")."""
    wrong = _need(lemma, "power-decay")
    if wrong:
        return wrong
    d, F = inst.d, rational(fact["floor_squared"])
    b = inst.B[0][0]
    if any(inst.B[a][c] != (b if a == c else 0) for a in range(d) for c in range(d)) or \
            not b > 0 or not F > 0:
        return False, "the bound along the way is checked for B = bI, b > 0, F > 0."
    r = exact(b * F)
    margin = r * r.exp() - (inst.n - 1) / arb(1).exp()
    start = max(sum((v * v for v in row), Fraction(0)) for row in inst.x0)
    return bool(margin > 0), (f"bF e^(bF) - (n-1)/e = {margin.lower()} > 0: max_i |x_i(t)|^2 <= "
                              f"max({start}, {F}) for all t >= 0.")


FACTS.update({"collapse": collapse, "power-law-decay": power_law_decay,
              "max-norm-bound": max_norm_bound})


# ------------------------------------------------------------------ isolated equilibria
def equilibrium_limit(inst, lemma, conclusions, fact):
    """Every token converges (to the certified equilibrium :math:`u^*` in the Krawczyk box;
    frozen tokens do not move), exponentially at the rate :math:`\\gamma > 0`."""
    wrong = _need(lemma, "equilibrium")
    if wrong:
        return wrong
    gamma = parse_ball(conclusions["gamma"])
    return bool(gamma > 0), f"|u(t) - u*|_T <= δ1 e^(-γ(t - t1)) with γ >= {gamma.lower()} > 0."


def limit_at_token(inst, lemma, conclusions, fact):
    """Every token tends to the exact position of the frozen token ``fact["token"]``: each
    moving token's limit box contains that token's ball, so the consensus configuration (a zero
    of the field for ``V = cI``) is in the Krawczyk box, and by uniqueness it is the limit."""
    wrong = _need(lemma, "equilibrium")
    if wrong:
        return wrong
    token = int(fact["token"])
    if token not in conclusions["frozen"]:
        return False, f"token {token} is not frozen."
    limits = [[parse_ball(v) for v in row] for row in conclusions["limits"]]
    for i, row in enumerate(limits):
        if not all(box.contains(p) for box, p in zip(row, limits[token], strict=True)):
            return False, f"the limit box of token {i} does not contain token {token}'s ball."
    return True, f"every token tends to x_{token}(0) (the unique equilibrium in the box)."


FACTS.update({"equilibrium-limit": equilibrium_limit, "limit-at-token": limit_at_token})


# ------------------------------------------------------------------ hyperplane drift (Theorem 4.2)
def follower_drifts(inst, lemma, conclusions, fact):
    r"""A follower's rescaled token has no limit (lemma ``hyperplane-drift``): it **drifts**,
    :math:`|\psi^*(z_k - z_\ell)| \ge \eta e^{|\operatorname{Re}\mu| t}` for all :math:`t \ge
    t_1`, so :math:`|z_k - z_\ell| \to \infty`; or it **turns**, :math:`|\psi^*(z_k - z_\ell)|
    \ge \eta` while :math:`e^{i\omega t}\psi^*(z_k - z_\ell)` converges (:math:`\mu = i\omega`,
    :math:`\omega \ne 0`). Either way every statement that each rescaled token converges, or
    that they reach consensus, is false on this instance."""
    wrong = _need(lemma, "hyperplane-drift")
    if wrong:
        return wrong
    if str(fact.get("variable", "z")) != "z":
        return False, "the drift is certified for the rescaled tokens z only."
    behaviour = conclusions["behaviour"]
    if behaviour == "turns" and conclusions.get("turning"):
        first = conclusions["turning"][0]
        return True, (f"z_{first['follower']} turns about its leader z_{first['leader']} "
                      f"forever (frequency {float(parse_ball(first['frequency']).mid()):.3g}, "
                      "at a distance bounded below): it has no limit.")
    drifting = conclusions["drifting"]
    if behaviour != "drifts" or not drifting:
        return False, f"no follower is certified to drift ({behaviour})."
    first = drifting[0]
    return True, (f"z_{first['follower']} drifts away from its leader z_{first['leader']} "
                  f"like e^({float(parse_ball(first['rate']).mid()):.3g} t) along its "
                  "hyperplane: it has no limit.")


FACTS.update({"follower-drifts": follower_drifts})
