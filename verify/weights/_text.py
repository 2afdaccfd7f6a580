"""The head table as text (``verify weights``) and Markdown (the report).

Examples
--------
>>> import numpy as np
>>> from verify.weights._classify import classify_head
>>> from verify.weights._heads import HeadWeights
>>> eye = np.eye(2, dtype=np.float32)
>>> c = classify_head(HeadWeights(0, 0, eye, eye, np.diag([2, -1]).astype(np.float32), eye))
>>> print(head_table([c]).splitlines()[2])
0.0    2                   1           yes    yes    0.707107    yes    no     1     0
"""

from __future__ import annotations

from verify.weights._classify import HeadClass, count_classes

__all__ = ["head_table", "head_table_markdown", "table_cells", "counts_sentence", "COLUMNS",
           "LEGEND", "dynamics_lines", "sphere_line"]

#: (header, width) of the table's columns
COLUMNS = (("head", 5), ("λ_1 (certified ball)", 26), ("|λ_2|", 10), ("rps", 5), ("good", 5),
           ("<Qφ,Kφ>", 10), ("para", 5), ("cplx", 5), ("k", 4), ("zeros", 5))


def _yes(value: bool | None) -> str:
    return "?" if value is None else "yes" if value else "no"


def table_cells(c) -> list[str]:
    """The cells of one row (``c``: a :class:`HeadClass` or anything with its fields)."""
    second = "" if c.second_modulus is None else f"{c.second_modulus:.6g}"
    qk_phi = "" if c.qk_phi is None else f"{c.qk_phi:.6g}"
    return [c.name, c.leading, second, _yes(c.real_positive_simple), _yes(c.good_triple), qk_phi,
            _yes(c.paranormal), _yes(c.complex_leading_pair),
            "?" if c.k is None else str(c.k), str(c.zero_multiplicity)]


def counts_sentence(classes: list[HeadClass]) -> str:
    """One sentence with the certified counts."""
    n = count_classes(classes)
    space = classes[0].space if classes else "model"
    return (f"{n['heads']} heads ({space} reading, d = {classes[0].d if classes else '?'}): "
            f"{n['real_positive_simple']} with a real, positive, simple, strictly dominant "
            f"λ_1; {n['good_triple']} good triples (Definition 4.1); {n['paranormal']} "
            f"paranormal V (Definition 5.1); {n['complex_leading_pair']} with a complex "
            f"leading pair; {n['qk_positive_definite']} with QᵀK ≻ 0; {n['undecided']} "
            "undecided (every answer certified).")


LEGEND = ("rps: λ_1 real, positive, simple, > |λ_2|; good: good triple (Definition 4.1) with "
          "<Qφ_1, Kφ_1> (β = 1/√d_head included); para: V paranormal (Definition 5.1); cplx: "
          "complex leading pair; k: eigenvalues with Re > 0 (Conjecture 4.3); zeros: "
          "multiplicity of the eigenvalue 0; ?: undecided.")


def head_table(classes: list[HeadClass]) -> str:
    """A fixed-width table, one row per head, the legend and the counts."""
    lines = ["  ".join(h.ljust(w) for h, w in COLUMNS).rstrip(),
             "  ".join("-" * w for _, w in COLUMNS)]
    for c in classes:
        lines.append("  ".join(v.ljust(w) for v, (_, w) in zip(table_cells(c), COLUMNS,
                                                                strict=True)).rstrip())
    return "\n".join(lines + ["", LEGEND, counts_sentence(classes)])


def head_table_markdown(classes: list[HeadClass]) -> str:
    """The same table in Markdown."""
    lines = ["| " + " | ".join(h.replace("|", "\\|") for h, _ in COLUMNS) + " |",
             "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(v.replace("|", "\\|") for v in table_cells(c)) + " |"
              for c in classes]
    return "\n".join(lines + ["", LEGEND, "", counts_sentence(classes)])


def _boolean(dyn: dict) -> str:
    """The 0/1 attention read at the horizon: "Boolean limit of P" only where a certificate
    carries it to all later times (``boolean_is_limit``); otherwise the finite-time reading it is
    (at a tiny horizon, the hardmax of the initial scores)."""
    if dyn.get("boolean_is_limit"):
        return f"Boolean limit of P of rank {dyn['boolean_rank']}"
    return (f"hardmax attention at t = {dyn['horizon']:g} of rank {dyn['boolean_rank']} (not "
            "certified as the limit: the Boolean limit of P if these leaders stay)")


def dynamics_lines(dyn: dict) -> list[str]:
    """Sentences (Markdown) on a run of :func:`verify.weights.sentence_dynamics`."""
    words = " ".join(dyn["words"])
    lines = [f"Sentence `{words}` under head {dyn['head']} alone ({dyn['variant']} model, "
             f"horizon {dyn['horizon']:g}; {dyn['good_triple']})", ""]
    if dyn["leaders"]:
        lines.append("Leaders (certified hardmax at the horizon): " + ", ".join(
            f"`{w}` (token {i + 1})" for i, w in zip(dyn["leaders"], dyn["leader_words"],
                                                     strict=True))
            + (f"; {_boolean(dyn)}." if dyn.get("boolean_rank") is not None else "."))
    if dyn["undecided"]:
        lines.append(f"Rows whose leader is undecided at the horizon: "
                     f"{[i + 1 for i in dyn['undecided']]}.")
    planes = dyn.get("hyperplanes")
    if planes:
        offsets = ", ".join(f"{c:.6g}" for c in planes["offsets"])
        far = max(planes["per_token"], key=lambda r: r["distance"])
        lines += ["", f"Predicted hyperplanes (Theorem 4.2): φ₁* ∈ {{{offsets}}} (a, b from the "
                  f"leaders). Observed at the horizon: the largest distance of a token to them is "
                  f"{far['distance']:.3g} (`{far['word']}`); φ₁* per token: " + ", ".join(
                      f"`{r['word']}` {r['phi']:.4g}" for r in planes["per_token"]) + "."]
    return lines


def sphere_line(dyn: dict | None) -> list[str]:
    """One sentence on the post-LN (sphere) run, if any."""
    if not dyn:
        return []
    if not dyn["leaders"] or dyn["undecided"]:
        return [f"Post-LN tokens on the sphere (same head, horizon {dyn['horizon']:g}): the "
                f"leaders are not all certified at the horizon (undecided rows "
                f"{[i + 1 for i in dyn['undecided']]})."]
    return [f"Post-LN tokens on the sphere (same head, horizon {dyn['horizon']:g}): leaders "
            + ", ".join(f"`{w}`" for w in dyn["leader_words"])
            + f"; {_boolean(dyn)}."]
