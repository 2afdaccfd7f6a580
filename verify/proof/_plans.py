r"""Which facts prove which conclusions: a claim's conclusions mapped, one by one, onto the
claim-level facts of :mod:`verify.lemmas.facts` that a lemma can certify.

A conclusion is provable on an instance only when its exact wording is one of the cases below;
anything else (another prediction, another quantity, a tolerance) has no proof here and the
instance keeps its estimate-based verdict. Each case names the facts, built from the
certificate's conclusions and, where needed, the instance:

================================  ==================  =========================================
conclusion                        lemma               facts
================================  ==================  =========================================
converges to polytope-S           leader-map          converge, limits-in-S
converges, functional phi1        good-triple         converge-phi1
approach hyperplanes-a0b          good-triple         hyperplanes
monotone max/min(z @ phi1)        good-triple         phi1-monotone
attention → extreme-tokens        leader-map (d=1)    leaders-extreme, free-rows
rate doubly-exponential ≥ v       leader-map          doubly-exponential (λ ≥ v)
escapes threshold-tokens, sign    leader-map (d=1)    limit-signs
escapes, at most k bounded        leader-map (d=1)    bounded-at-most
consecutive-gaps > 0              leader-map (d=1)    order-after-t1, and the enclosure on
                                                      [0, t1] (order kept at every step)
consensus                         sphere-consensus    consensus
∃ C, λ > 0: diameter ≤ C e^{-λt}  sphere-consensus    exponential-consensus
rate exponential > 0, diameter    sphere-consensus    exponential-consensus
identity norm(x[k] - x0[k]) = 0   masked-token        token-fixed (in x, or z; token k
                                                      attends only to itself)
limit x0[0], x0[0]/norm(x0[0])    sphere-consensus    consensus, limit-first-token
(causal mask)
consensus, converges (x)          masked-cap          consensus, converge (the cap's set is
                                                      every token)
limit ones·x0[k], x0[k]/|x0[k]|   masked-cap          converge, limit-at-root (k the root;
                                                      |x0[k]| = 1 exactly for x0[k])
clusters equal/at_most k (x)      masked-cap          converge, cap-clusters (one part per
                                                      root; equal: roots apart)
consensus (x), limit 0 (x)        power-decay         collapse
rate power-law ≥ p, max-norm (x)  power-decay         power-law-decay (p ≤ 1/2; p < 1/2 for >)
rate power-law ≥ p, max|P - 1/n|  power-decay         power-law-decay (p ≤ 1; p < 1 for >)
max-norm ≤ maximum(max(norm(x0)), power-decay         max-norm-bound (F a little below E², with
E) for all t                                          b F e^(bF) ≥ (n-1)/e)
converges, limit ones·x0[0],      equilibrium         equilibrium-limit; limit-at-token (token
consensus (x)                                         0 frozen, |x0[0]| = 1 exactly)
================================  ==================  =========================================

A lemma can also **refute**: :func:`masked_refutation` maps a conclusion that every token has a
limit (``converges``, ``limit``, ``clusters``) onto the fact ``token-no-limit`` of the
masked-token lemma (a token that attends only to itself — the causal first token, or a graph
mask's — grows, turns or drifts forever). :func:`apart_refutation` maps ``consensus``, one
cluster and every token at one limit (``ones((n, 1)) * ...``) onto the fact ``fixed-apart``: two
tokens that attend only to themselves (a graph mask with two sinks) never move, at distinct
points. ``consensus`` is
not among them: the other tokens may follow a turning first token, the diameter tending to 0.
:func:`drift_refutation` maps the same conclusions, and ``consensus``, on the rescaled tokens
``z`` onto the fact ``follower-drifts`` of the hyperplane-drift lemma (a follower of a good
triple certified unbounded along its hyperplane: no limit, and its distance to its leader tends
to infinity). A conclusion on a projection (``functional``) is never among them: Theorem 4.2's
``φ1*(z_i)`` does converge.
"""

from __future__ import annotations

import re
from fractions import Fraction

from verify.errors import InvalidArgument
from verify.exact.escape import above_escape_threshold
from verify.predict._expressions import evaluate, initial_namespace

__all__ = ["NoPlan", "plan_facts", "masked_refutation", "apart_refutation",
           "drift_refutation"]


class NoPlan(Exception):
    """No proof of this conclusion by this lemma (the message says why)."""


def _is(value, name: str) -> bool:
    return isinstance(value, dict) and value.get("predict") == name


def _threshold_tokens(instance) -> list[int]:
    values = [instance.x0[i, 0] for i in range(instance.n)]
    picked = []
    for sign, index in ((1, values.index(max(values))), (-1, values.index(min(values)))):
        if above_escape_threshold(sign * values[index], instance.n):
            picked.append(index)
    return sorted(set(picked))


def _exponential_bound(kind: str, p: dict) -> bool:
    """``exists`` C in (0, inf), lam in (0, inf) with ``q <= C * exp(-lam * t)`` (for all t)."""
    return kind == "exists" and set(p) <= {"constants", "quantity", "variable", "bound",
                                           "relation"} and \
        p.get("relation", "<=") == "<=" and \
        "".join(str(p.get("bound")).split()) == "C*exp(-lam*t)" and \
        {k: "".join(str(v).split()) for k, v in (p.get("constants") or {}).items()} == \
        {"C": "(0,inf)", "lam": "(0,inf)"}


def _positive_rate(kind: str, p: dict) -> bool:
    """``rate`` with law exponential, relation ``>`` and value 0: some positive rate."""
    return kind == "rate" and set(p) <= {"law", "relation", "value", "quantity", "variable"} \
        and p.get("law") == "exponential" and p.get("relation") == ">" and \
        Fraction(str(p.get("value"))) == 0


def _squash(text) -> str:
    return "".join(str(text).split())


def _power_decay_facts(kind: str, p: dict, instance) -> list[dict] | None:
    """The facts of lemma ``power-decay`` for one conclusion (table above), or ``None``."""
    # a conclusion without a variable reads the variable the run integrates
    on_x = p.get("variable", "z" if instance.model.rescaled else "x") == "x"
    if kind == "consensus" and on_x and set(p) <= {"variable"}:
        return [{"fact": "collapse"}]
    if kind == "limit" and on_x and set(p) <= {"variable", "equals"} and \
            _squash(p.get("equals")) == "zeros((n,d))":
        return [{"fact": "collapse"}]
    quantity = p.get("quantity")
    if kind == "rate" and p.get("law") == "power-law" and \
            set(p) <= {"law", "relation", "value", "quantity", "variable", "tail"} and \
            p.get("relation", ">=") in (">=", ">") and \
            ((quantity == "max-norm" and on_x) or quantity == "max(abs(P - 1/n))"):
        return [{"fact": "power-law-decay", "quantity": quantity,
                 "exponent_at_least": str(Fraction(str(p["value"]))),
                 "strict": p.get("relation") == ">"}]
    value = _squash(p.get("value"))
    head = "maximum(max(norm(x0)),"
    if kind == "inequality" and quantity == "max-norm" and on_x and \
            p.get("relation") == "<=" and set(p) <= {"quantity", "variable", "relation",
                                                      "value"} and \
            value.startswith(head) and value.endswith(")"):
        try:
            floor = float(evaluate(value[len(head):-1], initial_namespace(instance)).reshape(()))
        except (InvalidArgument, ValueError):
            return None
        if not floor > 0:
            return None
        # F a little below the formula's square: the certified bound is then below the claim's
        return [{"fact": "max-norm-bound",
                 "floor_squared": str(Fraction(floor * floor * (1 - 2.0 ** -20))
                                      .limit_denominator(2 ** 30))}]
    return None


def _equilibrium_facts(kind: str, p: dict, instance) -> list[dict] | None:
    """The facts of lemma ``equilibrium`` for one conclusion (table above), or ``None``."""
    on_x = p.get("variable", "x") == "x"
    if kind == "converges" and not p:
        return [{"fact": "equilibrium-limit"}]
    first_unit = sum(Fraction(v) ** 2 for v in instance.x0[0]) == 1  # x_0(0) = x0[0] exactly
    if kind == "consensus" and on_x and set(p) <= {"variable"}:
        return [{"fact": "limit-at-token", "token": 0}]
    if kind == "limit" and on_x and set(p) <= {"variable", "equals"} and first_unit and \
            _squash(p.get("equals")) == "ones((n,1))*x0[0]":
        return [{"fact": "limit-at-token", "token": 0}]
    return None


#: ``norm(x[k] - x0[k])`` (or ``z``): the distance of token ``k`` from where it started.
_FIXED_TOKEN = re.compile(r"norm\((?P<v>[xz])\[(?P<k>\d+)\]-x0\[(?P<k0>\d+)\]\)")


#: ``ones((n,1))*x0[k]`` or ``ones((n,1))*x0[k]/norm(x0[k])`` (spaces removed): every token's
#: limit is token ``k``'s start.
_AT_TOKEN = re.compile(r"ones\(\(n,1\)\)\*x0\[(?P<k>\d+)\](?P<unit>/norm\(x0\[(?P<k0>\d+)\]\))?")


def _cap_facts(kind: str, p: dict) -> list[dict] | None:
    """The facts of lemma ``masked-cap`` for one conclusion on the tokens ``x`` (table above),
    or ``None``."""
    if p.get("variable", "x") != "x":
        return None
    if kind in ("consensus", "converges") and set(p) <= {"variable"}:
        return [{"fact": "consensus" if kind == "consensus" else "converge"}]
    count = {k: p[k] for k in ("equal", "at_most") if k in p}
    if kind == "clusters" and set(p) <= {"variable", "equal", "at_most"} and len(count) == 1 and \
            str(next(iter(count.values()))).isdigit():
        key, value = next(iter(count.items()))
        return [{"fact": "converge"}, {"fact": "cap-clusters", key: int(value)}]
    at = _AT_TOKEN.fullmatch(_squash(p.get("equals"))) if kind == "limit" and \
        set(p) <= {"equals", "variable"} else None
    if at and (at["k0"] is None or at["k0"] == at["k"]):
        return [{"fact": "converge"}, {"fact": "limit-at-root", "token": int(at["k"]),
                                       "normalised": at["unit"] is not None}]
    return None


def plan_facts(spec, lemma: str, instance) -> list[dict]:
    """The facts (templates; ``"order-after-t1"`` gets its offsets later) that prove the
    conclusion ``spec`` through ``lemma``, or :class:`NoPlan`."""
    kind, p = spec.type, dict(spec.parameters)
    d = instance.d
    if kind == "converges" and lemma == "leader-map" and _is(p.get("to"), "polytope-S") \
            and set(p) == {"to"}:
        return [{"fact": "converge"}, {"fact": "limits-in-S"}]
    if kind == "converges" and lemma == "good-triple" and _is(p.get("functional"), "phi1") \
            and set(p) == {"functional"}:
        return [{"fact": "converge-phi1"}]
    if kind == "approach" and lemma == "good-triple" and _is(p.get("hyperplanes"),
                                                             "hyperplanes-a0b"):
        return [{"fact": "hyperplanes"}]
    if kind == "monotone" and lemma == "good-triple" and (
            (p.get("quantity"), p.get("direction")) in (("max(z @ phi1)", "nonincreasing"),
                                                        ("min(z @ phi1)", "nondecreasing"))):
        return [{"fact": "phi1-monotone"}]
    if lemma == "leader-map" and kind == "attention" and d == 1 and \
            _is(p.get("targets_within"), "extreme-tokens") and \
            set(p) <= {"targets_within", "free_rows_at_most"}:
        return [{"fact": "leaders-extreme"},
                {"fact": "free-rows", "at_most": int(p.get("free_rows_at_most", 0))}]
    if lemma == "leader-map" and kind == "rate" and p.get("law") == "doubly-exponential" \
            and p.get("quantity", "log-boolean-gap") == "log-boolean-gap" \
            and p.get("relation", ">=") == ">=":
        return [{"fact": "doubly-exponential", "rate_at_least": str(Fraction(p["value"]))}]
    if lemma == "leader-map" and kind == "escapes" and d == 1:
        if _is(p.get("tokens"), "threshold-tokens") and p.get("same_sign") and \
                not p.get("at_most_bounded"):
            tokens = _threshold_tokens(instance)
            signs = [1 if instance.x0[i, 0] > 0 else -1 for i in tokens]
            return [{"fact": "limit-signs", "tokens": tokens, "signs": signs}]
        if "tokens" not in p and not p.get("same_sign"):
            return [{"fact": "bounded-at-most", "at_most": int(p.get("at_most_bounded", 0))}]
    if lemma == "leader-map" and kind == "inequality" and d == 1 and \
            p.get("quantity") == "consecutive-gaps" and p.get("relation") == ">" and \
            Fraction(str(p.get("value"))) == 0:
        return [{"fact": "order-after-t1"}]
    if lemma == "sphere-consensus" and kind == "consensus" and p.get("variable", "x") == "x":
        return [{"fact": "consensus"}]
    if lemma == "sphere-consensus" and p.get("variable", "x") == "x" and \
            p.get("quantity") == "diameter" and (_exponential_bound(kind, p)
                                                 or _positive_rate(kind, p)):
        return [{"fact": "exponential-consensus"}]
    if lemma == "sphere-consensus" and kind == "limit" and set(p) <= {"equals", "variable"} \
            and p.get("variable", "x") == "x":
        equals = "".join(str(p.get("equals")).split()).removeprefix("ones((n,1))*")
        if equals in ("x0[0]", "x0[0]/norm(x0[0])"):
            return [{"fact": "consensus"},
                    {"fact": "limit-first-token", "normalised": equals != "x0[0]"}]
    if lemma == "masked-token" and kind == "identity" and set(p) == {"quantity", "value"} and \
            Fraction(str(p["value"])) == 0:
        fixed = _FIXED_TOKEN.fullmatch("".join(str(p["quantity"]).split()))
        if fixed and fixed["k"] == fixed["k0"] and int(fixed["k"]) < instance.n:
            return [{"fact": "token-fixed", "variable": fixed["v"], "token": int(fixed["k"])}]
    if lemma == "masked-cap":
        facts = _cap_facts(kind, p)
        if facts is not None:
            return facts
    if lemma == "power-decay":
        facts = _power_decay_facts(kind, p, instance)
        if facts is not None:
            return facts
    if lemma == "equilibrium":
        facts = _equilibrium_facts(kind, p, instance)
        if facts is not None:
            return facts
    raise NoPlan(f"{spec.where} ({kind}) has no proof through lemma {lemma} here.")


#: Conclusions that say every token has a limit, with the keys they may carry.
_LIMIT_CONCLUSIONS = {"converges": {"variable", "to", "tail_fraction"},
                      "limit": {"variable", "equals", "tail_fraction"},
                      "clusters": {"variable", "equal", "at_most", "tail_fraction"}}


def masked_refutation(spec, instance) -> list[dict] | None:
    """The facts that refute ``spec`` through the masked-token lemma (module docstring), or
    ``None``: a conclusion that every token (in its variable) has a limit."""
    keys = _LIMIT_CONCLUSIONS.get(spec.type)
    p = dict(spec.parameters)
    if keys is None or not set(p) <= keys:
        return None
    default = "z" if instance.model.rescaled else "x"
    return [{"fact": "token-no-limit", "variable": str(p.get("variable", default))}]


def apart_refutation(spec, instance) -> list[dict] | None:
    """The facts that refute ``spec`` through two masked tokens fixed at distinct points (module
    docstring; the second token is filled in by the caller), or ``None``: consensus, one
    cluster, or every token at one limit (``ones((n, 1)) * ...``)."""
    p = dict(spec.parameters)
    one = {"consensus": set(p) <= {"variable", "tail_fraction"},
           "clusters": set(p) <= {"variable", "equal", "at_most", "tail_fraction"} and
           str(p.get("equal", p.get("at_most"))) == "1" and not ("equal" in p and "at_most" in p),
           "limit": set(p) <= {"variable", "equals", "tail_fraction"} and
           _squash(p.get("equals")).startswith("ones((n,1))*")}
    if not one.get(spec.type):
        return None
    default = "z" if instance.model.rescaled else "x"
    return [{"fact": "fixed-apart", "variable": str(p.get("variable", default))}]


def drift_refutation(spec, instance) -> list[dict] | None:
    """The facts that refute ``spec`` through the hyperplane-drift lemma (module docstring), or
    ``None``: a conclusion that every rescaled token has a limit, or reaches consensus."""
    p = dict(spec.parameters)
    keys = _LIMIT_CONCLUSIONS.get(spec.type, {"variable"} if spec.type == "consensus" else None)
    if keys is None or not set(p) <= keys:
        return None
    if str(p.get("variable", "z" if instance.model.rescaled else "x")) != "z":
        return None
    return [{"fact": "follower-drifts", "variable": "z"}]
