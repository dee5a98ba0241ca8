"""Maths notation as a learner sees it. Plain strings of the series (exercise messages, readouts) write W^O, W_i^Q
or R^2 as one would type them; `html_scripts` turns each such caret into an HTML superscript (and the subscript
beside it into a subscript), `plain_scripts` turns a title's $W^O$ into Unicode for plain-text places (a browser
tab, a sidebar entry), and `raw_carets` finds any caret a learner would still see outside math ($...$) and code.
"""

from __future__ import annotations

import re

_WORD = r"[A-Za-z0-9]+"
_EXPONENT = r"\((?:[^()]|\([^()]*\))*\)|-?[A-Za-z0-9]+"  # O, 2, -T, or a bracketed (-2j/d_k), one level nested
# a symbol, its subscript before or after the caret, and its superscript: W^O, W_i^Q, W^O_i, R^2, base^(-2j/d_k),
# W_i^Kᵀ (a transpose sign may follow)
SCRIPTED = re.compile(rf"(?<![\w^])([A-Za-z]+)(?:_({_WORD}))?\^({_EXPONENT})(?:_({_WORD}))?(?![A-Za-z0-9_^])")
BRACKETED = re.compile(rf"\)\^({_EXPONENT})(?![A-Za-z0-9_^])")  # (W^K M)^T
MATH_OR_CODE = re.compile(r"\$\$.*?\$\$|\$[^$]*\$|`[^`]*`|<sup>.*?</sup>", re.DOTALL)
# Unicode superscripts of the letters and digits that have one (no capital C, F, Q, S, X, Y or Z)
SUPERSCRIPT = dict(
    zip(
        "0123456789+-=()ABDEGHIJKLMNOPRTUVWabcdefghijklmnoprstuvwxyz",
        "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ᴬᴮᴰᴱᴳᴴᴵᴶᴷᴸᴹᴺᴼᴾᴿᵀᵁⱽᵂᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻ",
        strict=True,
    )
)


def _exponent(text: str) -> str:
    """The superscript's text: brackets that only group it go, a leading minus is a minus sign."""
    if text.startswith("(") and text.endswith(")"):
        text = text[1:-1]
    return "−" + text[1:] if text.startswith("-") else text


def html_scripts(text: str, mathjax: bool = True) -> str:
    """HTML (already escaped) with each W^O, W_i^Q, W^O_i, R^2 written with <sup> and <sub>: W<sup>O</sup>.

    Outside maths and code only: $W^O$ is left for MathJax, `x ^ y` is Python. mathjax=False is for HTML that no
    MathJax typesets (an ipywidgets.HTML): there $W^O$ loses its dollars and becomes W<sup>O</sup> too."""
    if not mathjax:
        text = re.sub(r"\$([^$]*)\$", r"\1", text)

    def tag(m: re.Match) -> str:
        base, before, power, after = m.groups()
        sub = f"<sub>{before}</sub>" if before else ""
        return f"{base}{sub}<sup>{_exponent(power)}</sup>" + (f"<sub>{after}</sub>" if after else "")

    def scripts(part: str) -> str:
        return BRACKETED.sub(lambda m: f")<sup>{_exponent(m.group(1))}</sup>", SCRIPTED.sub(tag, part))

    out, last = [], 0
    for m in MATH_OR_CODE.finditer(text):  # maths ($W^O$, typeset by MathJax) and code (`a ^ b`) keep their text
        out += [scripts(text[last : m.start()]), m.group(0)]
        last = m.end()
    return "".join([*out, scripts(text[last:])])


def plain_scripts(text: str) -> str:
    """Plain text for a place that shows no HTML or maths: "The output projection $W^O$" -> "... Wᴼ".

    Dollar signs go; a superscript (^O, ^{O} or ^(...)) becomes Unicode when every character of it has a Unicode
    superscript, else ValueError names it (so a title never shows a raw caret in a sidebar)."""

    def power(m: re.Match) -> str:
        exponent = _exponent(m.group(1) or m.group(2)).replace("−", "-")
        if not all(c in SUPERSCRIPT for c in exponent):
            raise ValueError(f"text: expected superscripts Unicode can write, got {m.group(0)!r} in {text!r}")
        return "".join(SUPERSCRIPT[c] for c in exponent)

    return re.sub(rf"\^(?:\{{({_WORD})\}}|({_EXPONENT}))", power, text.replace("$", ""))


def raw_carets(text: str) -> list[str]:
    """The bits of text around each caret a learner would see as a raw "^": outside $...$, `...` and <sup>."""
    bare = MATH_OR_CODE.sub(" ", text)
    return [bare[max(0, i - 20) : i + 10] for i, c in enumerate(bare) if c == "^"]
