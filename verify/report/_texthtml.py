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
import unicodedata

__all__ = ["tex_to_unicode", "mathml", "markdown_to_html", "inline_html", "math_letter",
           "plain_text", "machine_math"]

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
#: MathML ``mathvariant`` (and the LaTeX command giving it) → Unicode style name.
_STYLES = {"script": "SCRIPT", "double-struck": "DOUBLE-STRUCK", "fraktur": "FRAKTUR",
           "bold": "BOLD", "bold-italic": "BOLD ITALIC", "sans-serif": "SANS-SERIF",
           "monospace": "MONOSPACE", "bold-script": "BOLD SCRIPT", "italic": "ITALIC"}
_COMMANDS = {"mathcal": "script", "mathscr": "script", "mathbb": "double-struck",
             "mathfrak": "fraktur", "mathbf": "bold", "boldsymbol": "bold-italic",
             "mathsf": "sans-serif", "mathtt": "monospace"}
_LEGACY = {"FRAKTUR": "BLACK-LETTER"}  # the letters Unicode had before the math block


def math_letter(letter: str, variant: str) -> str:
    """The Unicode mathematical alphanumeric for ``letter`` in a MathML ``mathvariant``
    (``"script"``, ``"double-struck"``, ``"fraktur"``, ``"bold"``, ...), or ``letter`` itself
    when there is none. Browsers ignore ``mathvariant`` (MathML Core keeps only ``normal``), so
    𝒦 must be the character itself, not a styled K.

    >>> math_letter("K", "script"), math_letter("R", "double-struck"), math_letter("B", "script")
    ('𝒦', 'ℝ', 'ℬ')
    >>> math_letter("C", "fraktur"), math_letter("x", "bold-italic"), math_letter("+", "script")
    ('ℭ', '𝒙', '+')
    """
    style = _STYLES.get(variant)
    if style is None or len(letter) != 1 or not letter.isascii() or not letter.isalnum():
        return letter
    kind = ("DIGIT " + unicodedata.name(letter).split()[-1] if letter.isdigit()
            else ("CAPITAL " if letter.isupper() else "SMALL ") + letter.upper())
    for name in (f"MATHEMATICAL {style} {kind}", f"{_LEGACY.get(style, style)} {kind}"):
        try:
            return unicodedata.lookup(name)
        except KeyError:
            continue
    return letter


_SUB = str.maketrans("0123456789+-=()aeijklmnoprstux", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑᵢⱼₖₗₘₙₒₚᵣₛₜᵤₓ")
_SUP = str.maketrans("0123456789+-=()inkdT*", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁱⁿᵏᵈᵀ*")


def _script(body: str, table) -> str | None:
    mapped = body.translate(table)
    return mapped if all(c != o or c in " " for c, o in zip(mapped, body, strict=True)) \
        or body.isdigit() else None


def tex_to_unicode(tex: str) -> str:
    """Legible Unicode for a LaTeX formula (best effort; unknown commands lose the backslash)."""
    s = re.sub(r"\^\{?\\top\}?", "ᵀ", tex)
    s = re.sub(r"\\(mathcal|mathscr|mathbb|mathfrak|mathbf|boldsymbol|mathsf|mathtt)\s*"
               r"(?:\{(\w+)\}|(\w))",
               lambda m: "".join(math_letter(c, _COMMANDS[m.group(1)])
                                 for c in m.group(2) or m.group(3)), s)
    s = re.sub(r"\\(?:mathrm|operatorname|text|textrm)\{([^{}]*)\}", r"\1", s)
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
    return None if "\\" in out else _renderable(out)


#: Characters latex2mathml emits that common fonts lack, and the standard character meant.
_GLYPHS = {"<mi>&#x029F5;</mi>": "<mo>&#x02216;</mo>"}  # \setminus: ⧵ (no font) → ∖


def _renderable(out: str) -> str:
    """MathML a browser draws as meant: styled letters (``mathvariant="script"``, which
    Chromium ignores) as Unicode mathematical alphanumerics, and no character fonts lack."""
    def letter(m):
        mapped = math_letter(m.group(3), m.group(2))
        return f"<{m.group(1)}>{mapped}</{m.group(1)}>" if mapped != m.group(3) else m.group(0)

    out = re.sub(r'<(mi|mn) mathvariant="([a-z-]+)">(\w)</\1>', letter, out)
    for old, new in _GLYPHS.items():
        out = out.replace(old, new)
    return out


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
    """One paragraph's inline Markdown: ``$math$``, ``**bold**``, ``*em*``, ```code```,
    ``[text](https://…)``."""
    parts = re.split(r"(\$[^$]+\$|`[^`]+`)", text)
    out = []
    for part in parts:
        if part.startswith("$") and part.endswith("$") and len(part) > 1:
            out.append(_math(part[1:-1], False))
        elif part.startswith("`") and part.endswith("`") and len(part) > 1:
            out.append(f"<code>{html.escape(part[1:-1])}</code>")
        else:
            e = html.escape(part, quote=False)
            e = re.sub(r"\[([^\]]+)\]\((https?://[^)\s\"]+)\)", r'<a href="\2">\1</a>', e)
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


def plain_text(text: str) -> str:
    """The words of an inline-Markdown text without markup: formulas as Unicode
    (:func:`tex_to_unicode`), no ``*``, ``**`` or backticks (alt text, titles, terminals).

    >>> plain_text(r"**Polytope**, $\\mathcal{K} \\subset \\mathbb{R}^2$ by `verify`")
    'Polytope, 𝒦 ⊂ ℝ² by verify'
    """
    parts = re.split(r"(\$[^$]+\$|`[^`]+`)", text)
    out = []
    for part in parts:
        if part.startswith("$") and part.endswith("$") and len(part) > 1:
            out.append(tex_to_unicode(part[1:-1]))
        elif part.startswith("`") and part.endswith("`") and len(part) > 1:
            out.append(part[1:-1])
        else:
            part = re.sub(r"\[([^\]]+)\]\((https?://[^)\s]+)\)", r"\1 (\2)", part)
            out.append(re.sub(r"\*\*(.+?)\*\*|(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])",
                              lambda m: m.group(1) or m.group(2), part))
    return "".join(out)


#: Pseudo-math written by the checks (plain text for terminals) and its LaTeX: each pattern
#: matches a whole fragment; :func:`machine_math` wraps it in ``$…$``.
_NAMES = {"mu": r"\mu", "lambda": r"\lambda", "pi": r"\pi", "phi": r"\varphi", "gamma": r"\gamma",
          "sigma": r"\sigma", "kappa": r"\kappa", "inf": r"\infty", "∞": r"\infty"}
_GREEK = "α-ωΑ-Ω"
_ATOM = rf"(?:[A-Za-z{_GREEK}]|phi\d|lambda|mu|pi)"
_PIECE = (rf"e\^\([^()]*\)"                                     # e^(2 mu t)
          rf"|exp\((?:[^()]|\([^()]*\))*\)"                       # exp(-rt)
          rf"|{_ATOM}_(?:\{{[^}}]*\}}|\d+|[A-Za-z∞])(?:_(?:\d+|[a-z∞]|inf))?(?![\w])"
          rf"(?:\((?:t|t=[^()\s]*|[a-z])\))?"                     # r_j, D_1_∞, z_i(t=0.25)
          rf"|[A-Za-z]\^\((?:[^()]*)\)"                           # R^(-k)
          rf"|[A-Za-z]\^-?\w+"                                     # t^0
          rf"|\w+\s@\s\w+")                                        # z @ phi1
_FRAGMENT = re.compile(rf"(?<![\w`/.#-])(?:\|(?:{_PIECE})\||{_PIECE})")
_KEYWORD = re.compile(r"\b(\w+)='([^'\s]*)'")                  # precision='auto'


def _to_tex(fragment: str) -> str:
    tex = fragment
    tex = re.sub(r"exp\(((?:[^()]|\([^()]*\))*)\)", r"e^{\1}", tex)
    tex = re.sub(r"\^\(([^()]*)\)", r"^{\1}", tex)
    tex = re.sub(r"\^(-?\w+)", r"^{\1}", tex)
    tex = re.sub(r"_(\d+|[a-z])_(\d+|[a-z∞]|inf)(?!\w)", r"_{\1,\2}", tex)
    tex = re.sub(r"_(\d+|[A-Za-z∞])(?!\w)", r"_{\1}", tex)
    tex = re.sub(r"\s*@\s*", r" \\cdot ", tex)
    tex = re.sub(r"\bphi(\d)", r"\\varphi_{\1}", tex)
    tex = re.sub(r"(?<![\\\w])(mu|lambda|gamma|sigma|kappa|inf|pi)(?![A-Za-z])",
                 lambda m: _NAMES[m.group(1)], tex)
    tex = tex.replace("∞", r"\infty").replace("*", r"\,")
    return tex


def machine_math(text: str) -> str:
    r"""Wrap the pseudo-math fragments of a machine-written text (``e^(2 mu t)``, ``r_j(t)``,
    ``|D_1_∞|``, ``R^(-k)``, ``z @ phi1``) in ``$…$`` as LaTeX, so that they are typeset
    like the claim statements, and keyword arguments (``precision='auto'``) as code; text
    already in ``$…$`` or backticks is left alone, and so are names such as ``max_horizon``.

    >>> print(machine_math("rate of r_j = 2 (t^0); e^(2 mu t) grows; max_horizon = 32"))
    rate of $r_{j}$ = 2 ($t^{0}$); $e^{2 \mu t}$ grows; max_horizon = 32
    >>> print(machine_math("max(z @ phi1): |D_1_∞| ≤ 0.2, z_4(t=3); precision='auto'"))
    max($z \cdot \varphi_{1}$): $|D_{1,\infty}|$ ≤ 0.2, $z_{4}(t=3)$; `precision = "auto"`
    """
    parts = re.split(r"(\$[^$]+\$|`[^`]+`)", text)
    out = []
    for part in parts:
        if part.startswith(("$", "`")) and len(part) > 1:
            out.append(part)
            continue
        part = _KEYWORD.sub(lambda m: f'`{m.group(1)} = "{m.group(2)}"`', part)
        pieces = re.split(r"(`[^`]+`)", part)
        out += [piece if piece.startswith("`") else
                _FRAGMENT.sub(lambda m: f"${_to_tex(m.group(0))}$", piece) for piece in pieces]
    return "".join(out)
