r"""Offline-readable text for the HTML report: a small Markdown subset and formulas as MathML.

Formulas are typeset without a network: the LaTeX is converted to MathML when the report is
written (``latex2mathml``; browsers render ``<math>`` natively), inside a span whose ``title``
keeps the exact LaTeX source. A formula that does not convert cleanly (an unknown command would
survive as text) falls back to legible Unicode (``\lambda`` → λ, ``\le`` → ≤, ``Q^\top`` → Qᵀ,
``\mathbb{R}`` → ℝ) in a monospace span.

Examples
--------
>>> tex_to_unicode(r"Q^\top K \succ 0, \ |\lambda_2| < \lambda")
'Qᵀ K ≻ 0,  |λ₂| < λ'
>>> markdown_to_html("A *bound* $x \\le 1$.")
'<p>A <em>bound</em> <span class="math" title="x \\le 1"><math ...</math></span>.</p>'
>>> inline_html(r"$\unknowncommand x$")
'<span class="math plain" title="\\unknowncommand x">unknowncommand x</span>'
"""

from __future__ import annotations

import html
import re

__all__ = ["tex_to_unicode", "mathml", "markdown_to_html", "inline_html"]

_SYMBOLS = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "varepsilon": "ε", "epsilon": "ε",
    "zeta": "ζ", "eta": "η", "theta": "θ", "kappa": "κ", "lambda": "λ", "mu": "μ", "nu": "ν",
    "xi": "ξ", "pi": "π", "rho": "ρ", "sigma": "σ", "tau": "τ", "varphi": "φ", "phi": "φ",
    "chi": "χ", "psi": "ψ", "omega": "ω", "Gamma": "Γ", "Delta": "Δ", "Lambda": "Λ",
    "Sigma": "Σ", "Phi": "Φ", "Omega": "Ω", "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥",
    "ne": "≠", "neq": "≠", "to": "→", "rightarrow": "→", "mapsto": "↦", "infty": "∞",
    "in": "∈", "notin": "∉", "subset": "⊂", "subseteq": "⊆", "cup": "∪", "cap": "∩",
    "oplus": "⊕", "otimes": "⊗", "times": "×", "cdot": "·", "cdots": "⋯", "ldots": "…",
    "dots": "…", "sum": "∑", "prod": "∏", "int": "∫", "partial": "∂", "nabla": "∇",
    "forall": "∀", "exists": "∃", "langle": "⟨", "rangle": "⟩", "succ": "≻", "succeq": "⪰",
    "prec": "≺", "approx": "≈", "sim": "∼", "equiv": "≡", "pm": "±", "mp": "∓", "top": "ᵀ",
    "setminus": "∖", "emptyset": "∅", "Rightarrow": "⇒", "iff": "⇔", "implies": "⇒",
    "lvert": "|", "rvert": "|", "lVert": "‖", "rVert": "‖", "Vert": "‖", "|": "‖", "quad": "  ",
    "qquad": "    ", ",": " ", ";": " ", "!": "", " ": " ", "{": "{", "}": "}", "circ": "∘",
    "star": "⋆", "ast": "∗", "min": "min", "max": "max", "log": "log", "exp": "exp",
    "det": "det", "dim": "dim", "ker": "ker", "sup": "sup", "inf": "inf", "lim": "lim",
    "left": "", "right": "", "big": "", "Big": "", "bigl": "", "bigr": "", "displaystyle": "",
}
_CALLIGRAPHIC = {"A": "𝒜", "C": "𝒞", "F": "ℱ", "G": "𝒢", "H": "ℋ", "K": "𝒦", "P": "𝒫",
                 "S": "𝒮", "V": "𝒱"}
_BLACKBOARD = {"R": "ℝ", "N": "ℕ", "Z": "ℤ", "Q": "ℚ", "C": "ℂ", "S": "𝕊"}
_SUB = str.maketrans("0123456789+-=()aeijklmnoprstux", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑᵢⱼₖₗₘₙₒₚᵣₛₜᵤₓ")
_SUP = str.maketrans("0123456789+-=()inkdT*", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁱⁿᵏᵈᵀ*")


def _script(body: str, table) -> str | None:
    mapped = body.translate(table)
    return mapped if all(c != o or c in " " for c, o in zip(mapped, body, strict=True)) \
        or body.isdigit() else None


def tex_to_unicode(tex: str) -> str:
    """Legible Unicode for a LaTeX formula (best effort; unknown commands lose the backslash)."""
    s = re.sub(r"\^\{?\\top\}?", "ᵀ", tex)
    s = re.sub(r"\\mathbb\{(\w)\}", lambda m: _BLACKBOARD.get(m.group(1), m.group(1)), s)
    s = re.sub(r"\\mathcal\s*\{?(\w)\}?", lambda m: _CALLIGRAPHIC.get(m.group(1), m.group(1)), s)
    s = re.sub(r"\\(?:mathcal|mathrm|mathbf|operatorname|text|textrm|mathsf)\{([^{}]*)\}",
               r"\1", s)
    s = re.sub(r"\\frac\{([^{}]*)\}\{([^{}]*)\}", r"(\1)/(\2)", s)
    s = re.sub(r"\\sqrt\{([^{}]*)\}", r"√(\1)", s)
    s = re.sub(r"\\([A-Za-z]+|[|,;! {}])", lambda m: _SYMBOLS.get(m.group(1), m.group(1)), s)

    def script(m, table, mark):
        body = m.group(1) if m.group(1) is not None else m.group(2)
        mapped = _script(body, table)
        return mapped if mapped is not None else f"{mark}({body})" if len(body) > 1 \
            else f"{mark}{body}"

    s = re.sub(r"_\{([^{}]*)\}|_(\w)", lambda m: script(m, _SUB, "_"), s)
    s = re.sub(r"\^\{([^{}]*)\}|\^(\S)", lambda m: script(m, _SUP, "^"), s)
    return s.replace("{", "").replace("}", "")


def mathml(tex: str, block: bool = False) -> str | None:
    """The MathML of a LaTeX formula, or ``None`` when it does not convert cleanly (an error,
    or a command the converter does not know, which it would leave as text).

    >>> mathml(r"\\mathbb{R}^d")[:48]
    '<math xmlns="http://www.w3.org/1998/Math/MathML"'
    """
    from latex2mathml.converter import convert

    try:
        out = convert(tex, display="block" if block else "inline")
    except Exception:  # noqa: BLE001 - the Unicode fallback is always there
        return None
    return None if "\\" in out else out


def _math(tex: str, block: bool) -> str:
    tag = "div" if block else "span"
    source = tex.strip()
    converted = mathml(source, block)
    if converted is not None:
        return (f'<{tag} class="math{" block" if block else ""}" '
                f'title="{html.escape(source)}">{converted}</{tag}>')
    return (f'<{tag} class="math plain{" block" if block else ""}" '
            f'title="{html.escape(source)}">{html.escape(tex_to_unicode(source))}</{tag}>')


def inline_html(text: str) -> str:
    """One paragraph's inline Markdown: ``$math$``, ``**bold**``, ``*em*``, ```code```."""
    parts = re.split(r"(\$[^$]+\$|`[^`]+`)", text)
    out = []
    for part in parts:
        if part.startswith("$") and part.endswith("$") and len(part) > 1:
            out.append(_math(part[1:-1], False))
        elif part.startswith("`") and part.endswith("`") and len(part) > 1:
            out.append(f"<code>{html.escape(part[1:-1])}</code>")
        else:
            e = html.escape(part, quote=False)
            e = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", e)
            e = re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"<em>\1</em>", e)
            out.append(e)
    return "".join(out)


def markdown_to_html(text: str) -> str:
    """Paragraphs, ``$$display$$`` formulas and ``- `` lists of a Markdown text."""
    blocks = re.split(r"(\$\$.+?\$\$)", text, flags=re.S)
    out = []
    for block in blocks:
        if block.startswith("$$") and block.endswith("$$"):
            out.append(_math(block[2:-2], True))
            continue
        for para in re.split(r"\n\s*\n", block):
            lines = [ln.strip() for ln in para.strip().splitlines() if ln.strip()]
            if not lines:
                continue
            if all(ln.startswith(("- ", "* ")) for ln in lines):
                items = "".join(f"<li>{inline_html(ln[2:])}</li>" for ln in lines)
                out.append(f"<ul>{items}</ul>")
            else:
                out.append(f"<p>{inline_html(' '.join(lines))}</p>")
    return "\n".join(out)
