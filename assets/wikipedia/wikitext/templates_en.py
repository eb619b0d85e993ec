"""English Wikipedia's inline templates whose visible text is kept, rendered to plain text.

Every other template is removed by :mod:`assets.wikipedia.wikitext.convert`, which calls the renderers
here for the templates named in :data:`RENDERERS` (the hook for other languages: another wiki's renderers
are a table of the same shape). A renderer gets the template's positional and named parameters, unrendered,
and a :class:`ParamText` that renders a parameter's own nested templates (at most a few levels deep).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Protocol

LANG_CODE_RE = re.compile(r"[a-z]{2,3}(?:-[a-z]{2,8})*")
"""A language code as wikis write them (``de``, ``zh-yue``)."""


class ParamText(Protocol):
    """Renders a template parameter: nested templates rendered or removed, trimmed (``text``), or as a
    single-line value (``value``: numbers, units, date parts)."""

    def text(self, raw: str) -> str: ...

    def value(self, raw: str) -> str: ...


_Params = tuple[list[str], dict[str, str]]

_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")  # fmt: skip
_MONTH_BY_NAME = {m.lower(): m for m in _MONTHS} | {m[:3].lower(): m for m in _MONTHS} | {"sept": "September"}
_YES = frozenset({"y", "yes", "true", "on", "1"})
# {{convert}} range separators, as displayed
_CONVERT_RANGES = {
    "-": "-", "–": "–", "&ndash;": "–", "—": "—", "to": " to ", "to(-)": " to ", "and": " and ",
    "and(-)": " and ", "or": " or ", ", and": ", and ", ", or": ", or ", ",": ", ", "by": " by ",
    "x": " × ", "×": " × ", "+": " + ", "+/-": " ± ", "±": " ± ",
}  # fmt: skip
# {{convert}} unit codes that are not readable as written
_CONVERT_UNITS = {
    "C": "°C", "F": "°F", "C-change": "°C", "F-change": "°F", "K-change": "K", "km2": "km²",
    "m2": "m²", "cm2": "cm²", "mm2": "mm²", "mi2": "sq mi", "sqmi": "sq mi", "sqft": "sq ft",
    "sqyd": "sq yd", "sqin": "sq in", "km3": "km³", "m3": "m³", "cm3": "cm³", "cuft": "cu ft",
    "cuyd": "cu yd", "cuin": "cu in", "oilbbl": "bbl", "PD/sqmi": "/sq mi", "PD/km2": "/km²",
    "kph": "km/h", "e3acre": "thousand acres", "e6acre": "million acres", "e3mi": "thousand miles",
    "e6mi": "million miles", "e6km": "million km", "e9km": "billion km", "Moilbbl": "million bbl",
    "koilbbl": "thousand bbl", "Goilbbl": "billion bbl", "Moilbbl/d": "million bbl/d",
    "koilbbl/d": "thousand bbl/d", "oilbbl/d": "bbl/d", "e6cuft": "million cu ft",
    "e9cuft": "billion cu ft", "e12cuft": "trillion cu ft", "Tcuft": "trillion cu ft",
    "e6m3": "million m³", "e9m3": "billion m³", "e6t": "million t", "e6ha": "million ha",
    "e6carat": "million carats", "e6sqmi": "million sq mi", "e6km2": "million km²",
}  # fmt: skip
_COMPOUND_RE = re.compile(r"\s|&nbsp;|[-+−–×*/]")
_NUMBER_RE = re.compile(r"[-+−]?[0-9][0-9.,]*")
_FORMATNUM_RE = re.compile(r"(-?)([0-9]{1,40})(\.[0-9]+)?")
_ISO_DATE_RE = re.compile(r"(-?[0-9]{1,4})-([0-9]{1,2})(?:-([0-9]{1,2}))?")
# possessive quantifiers: no backtracking on long runs of blanks
_TEMPLATE_NAME_RE = re.compile(r"[\s_]*+(?:template[\s_]*+:[\s_]*+)?([^|:{}\[\]<>\n]*+)\s*+(\||:|$)", re.I)
_NAMED_PARAM_RE = re.compile(r"\s*+[\w -]++\s*+=")
_PARAM_SPLIT_RE = re.compile(r"\{\{+|\}\}+|\[\[|\]\]|\|")


def _split_params(body: str) -> list[str]:
    """Split a template body on the pipes outside nested ``{{..}}``/``[[..]]``."""
    if "{{" not in body and "[[" not in body:
        return body.split("|")
    parts: list[str] = []
    last = braces = brackets = 0
    for m in _PARAM_SPLIT_RE.finditer(body):
        token = m.group()
        kind = token[0]
        if kind == "|":
            if not braces and not brackets:
                parts.append(body[last : m.start()])
                last = m.end()
        elif kind == "{":
            braces += len(token)
        elif kind == "}":
            braces = max(braces - len(token), 0)
        elif kind == "[":
            brackets += 1
        elif brackets:
            brackets -= 1
    parts.append(body[last:])
    return parts


def _params(body: str) -> _Params:
    """Positional (``N=`` included, 0-based) and named parameters, unrendered."""
    numbered: dict[int, str] = {}
    named: dict[str, str] = {}
    n = 0
    for part in _split_params(body):
        m = _NAMED_PARAM_RE.match(part)
        if m is None:
            n += 1
            numbered[n] = part
            continue
        key = part[: m.end() - 1].strip().lower()
        if key.isdecimal() and len(key) < 4:
            numbered[int(key)] = part[m.end() :]
        else:
            named[key] = part[m.end() :].strip()
    if not numbered:
        return [], named
    if len(numbered) == max(numbered):
        return [numbered[i] for i in range(1, len(numbered) + 1)], named
    return [numbered.get(i, "") for i in range(1, max(numbered) + 1)], named


def _inline(text: str) -> str:
    return text.replace("\n", " ") if "\n" in text else text


def _arg(pos: list[str], i: int, render: ParamText) -> str:
    return render.value(pos[i]) if i < len(pos) else ""


def _r_first(pos: list[str], named: dict[str, str], render: ParamText) -> str:
    """``{{nowrap|x}}``, ``{{small|x}}``, ``{{lang-xx|x}}``, ... -> ``x``."""
    return _inline(render.text(pos[0])) if pos else ""


def _r_second(pos: list[str], named: dict[str, str], render: ParamText) -> str:
    """``{{lang|code|x}}`` -> ``x``."""
    return _inline(render.text(pos[1])) if len(pos) > 1 else ""


def _r_last(pos: list[str], named: dict[str, str], render: ParamText) -> str:
    """``{{transl|ar|x}}`` / ``{{transl|ar|ALA|x}}`` -> ``x``."""
    return _inline(render.text(pos[-1])) if len(pos) > 1 else ""


def _r_join(pos: list[str], named: dict[str, str], render: ParamText) -> str:
    """``{{sic|x}}`` / ``{{sic|Chi|na}}`` -> ``x`` / ``China``."""
    return _inline("".join(render.text(p) for p in pos))


def _r_circa(pos: list[str], named: dict[str, str], render: ParamText) -> str:
    year = _arg(pos, 0, render)
    return f"c. {year}" if year else "c."


def _r_frac(pos: list[str], named: dict[str, str], render: ParamText) -> str:
    """``{{frac|2}}`` -> 1/2, ``{{frac|1|2}}`` -> 1/2, ``{{frac|3|1|2}}`` -> 3 1/2."""
    parts = [_arg(pos, i, render) for i in range(min(len(pos), 3))]
    if len(parts) > 1:  # a compound numerator/denominator: {{sfrac|n + 1|2}} -> (n + 1)/2
        parts[-2:] = [f"({p})" if _COMPOUND_RE.search(p, 1) else p for p in parts[-2:]]
    if len(parts) == 1:
        return f"1/{parts[0]}" if parts[0] else ""
    if len(parts) == 2:
        return f"{parts[0]}/{parts[1]}"
    if len(parts) == 3:
        return f"{parts[0]} {parts[1]}/{parts[2]}"
    return ""


def _r_ill(pos: list[str], named: dict[str, str], render: ParamText) -> str:
    """``{{ill|Title|de|Titel}}`` -> Title (``lt=`` wins; old ``{{ill|de|Title}}`` form)."""
    label = named.get("lt")
    if label:
        return _inline(render.text(label))
    lang = LANG_CODE_RE.fullmatch
    if len(pos) > 1 and lang(pos[0].strip()) and not lang(pos[1].strip()):
        return _inline(render.text(pos[1]))
    return _r_first(pos, named, render)


def _r_nihongo(pos: list[str], named: dict[str, str], render: ParamText) -> str:
    """``{{nihongo|English|漢字|rōmaji|extra|extra2}}`` -> ``English (漢字, rōmaji, extra) extra2``."""
    english, kanji, romaji, extra, extra2 = (_inline(render.text(p)) for p in (pos + [""] * 5)[:5])
    head = english or kanji
    inside = [p for p in ((kanji if english else ""), romaji, extra) if p]
    out = f"{head} ({', '.join(inside)})" if head and inside else head or ", ".join(inside)
    return f"{out} {extra2}" if extra2 else out


def _r_nihongo3(pos: list[str], named: dict[str, str], render: ParamText) -> str:
    """``{{nihongo3|English|漢字|rōmaji}}`` -> ``rōmaji (漢字, English)``."""
    english, kanji, romaji = (_inline(render.text(p)) for p in (pos + [""] * 3)[:3])
    return _r_nihongo([romaji, kanji, english], {}, render)


def _r_quote(pos: list[str], named: dict[str, str], render: ParamText) -> str:
    """``{{quote|text|author}}`` / ``{{blockquote|text=..}}``: the quote, as its own block."""
    raw = named.get("text") or named.get("quote") or (pos[0] if pos else "")
    text = render.text(raw)
    return f"\n\n{text}\n\n" if text else ""


def _r_formatnum(pos: list[str], named: dict[str, str], render: ParamText) -> str:
    """``{{formatnum:1234567.5}}`` -> ``1,234,567.5`` (non-numbers unchanged)."""
    value = _arg(pos, 0, render)
    m = _FORMATNUM_RE.fullmatch(value)
    if m is None:
        return value
    sign, digits, fraction = m.groups()
    head = len(digits) % 3 or 3
    groups = [digits[:head]] + [digits[i : i + 3] for i in range(head, len(digits), 3)]
    return sign + ",".join(groups) + (fraction or "")


def _month(raw: str) -> str:
    if raw.isdecimal():
        n = int(raw[-2:])
        return _MONTHS[n - 1] if 1 <= n <= 12 else ""
    return _MONTH_BY_NAME.get(raw.lower().rstrip("."), "")


def _date(year: str, month: str, day: str, month_first: bool) -> str:
    """``14 March 1879`` / ``March 14, 1879`` / ``March 1879`` / ``1879``."""
    if not month and not day:
        m = _ISO_DATE_RE.fullmatch(year)
        if m is not None:
            year, month, day = m.group(1), m.group(2), m.group(3) or ""
    if not month:
        return year
    name = _month(month) or month
    if day.isdecimal():
        day = day.lstrip("0") or day
    if not day:
        return f"{name} {year}" if year else name
    if month_first:
        return f"{name} {day}, {year}" if year else f"{name} {day}"
    return f"{day} {name} {year}" if year else f"{day} {name}"


def _r_date(pos: list[str], named: dict[str, str], render: ParamText) -> str:
    """``{{birth date|1879|3|14}}`` and relatives: the (first) date, day-first unless ``mf=yes``."""
    year, month, day = (_arg(pos, i, render) for i in range(3))
    if not year:
        return ""
    return _date(year, month, day, named.get("mf", "").lower() in _YES)


def _r_year(pos: list[str], named: dict[str, str], render: ParamText) -> str:
    """``{{birth year and age|1950}}`` -> ``1950``."""
    return _arg(pos, 0, render)


def _r_as_of(pos: list[str], named: dict[str, str], render: ParamText) -> str:
    """``{{as of|2016|5}}`` -> ``As of May 2016``; ``lc=y`` lowercases, ``alt=`` replaces."""
    alt = named.get("alt")
    if alt:
        return _inline(render.text(alt))
    year, month, day = (_arg(pos, i, render) for i in range(3))
    head = "as of" if named.get("lc", "").lower() in _YES else "As of"
    date = _date(year, month, day, named.get("df", "").lower() == "us")
    return f"{head} {date}" if date else head


def _r_convert(pos: list[str], named: dict[str, str], render: ParamText) -> str:
    """``{{convert|5|to|10|km|mi}}`` -> ``5 to 10 km``: the input value(s) and unit only."""
    args = [render.value(p) for p in pos[:8]]
    if not args or not args[0]:
        return ""
    out = [args[0]]
    i = 1
    while i + 1 < len(args) and args[i] in _CONVERT_RANGES and args[i + 1]:
        out.append(_CONVERT_RANGES[args[i]] + args[i + 1])
        i += 2
    if i < len(args) and args[i]:
        unit = _CONVERT_UNITS.get(args[i], args[i])
        out.append(unit if unit[0] == "/" else " " + unit)  # 5.8/sq mi
        # mixed units: {{convert|6|ft|4|in|cm}} -> 6 ft 4 in
        if i + 2 < len(args) and _NUMBER_RE.fullmatch(args[i + 1]) and args[i + 2]:
            unit = args[i + 2]
            if not _NUMBER_RE.fullmatch(unit) and unit not in _CONVERT_RANGES:
                out.append(f" {args[i + 1]} {_CONVERT_UNITS.get(unit, unit)}")
    return "".join(out)


def _r_apostrophe(pos: list[str], named: dict[str, str], render: ParamText) -> str:
    return "'"


def _r_equals(pos: list[str], named: dict[str, str], render: ParamText) -> str:
    return "="


def _r_apostrophe_s(pos: list[str], named: dict[str, str], render: ParamText) -> str:
    return "'s"


_RENDERERS = {
    "lang": _r_second,
    "nowrap": _r_first, "nobr": _r_first, "small": _r_first, "smaller": _r_first, "big": _r_first,
    "large": _r_first, "larger": _r_first,
    "abbr": _r_first, "mvar": _r_first, "math": _r_first, "nihongo2": _r_first,
    "sic": _r_join, "transl": _r_last, "transliteration": _r_last,
    "circa": _r_circa, "c.": _r_circa, "ca.": _r_circa,
    "frac": _r_frac, "fraction": _r_frac, "sfrac": _r_frac,
    "ill": _r_ill, "interlanguage link": _r_ill, "interlanguage link multi": _r_ill,
    "nihongo": _r_nihongo, "nihongo3": _r_nihongo3,
    "quote": _r_quote, "blockquote": _r_quote, "quotation": _r_quote, "cquote": _r_quote,
    "formatnum": _r_formatnum,
    "as of": _r_as_of, "asof": _r_as_of,
    "convert": _r_convert, "cvt": _r_convert,
    "birth date": _r_date, "death date": _r_date, "birth date and age": _r_date,
    "death date and age": _r_date, "start date": _r_date, "end date": _r_date,
    "start date and age": _r_date, "end date and age": _r_date, "dts": _r_date,
    "birth year and age": _r_year, "death year and age": _r_year,
    "'": _r_apostrophe, "'s": _r_apostrophe_s, "=": _r_equals,
}  # fmt: skip


Renderer = Callable[[list[str], dict[str, str], ParamText], str]
RENDERERS: dict[str, Renderer] = _RENDERERS
"""Template name (lower case, single spaces) -> renderer."""


def _r_sortname(pos: list[str], named: dict[str, str], render: ParamText) -> str:
    """``{{sortname|First|Last}}`` -> ``First Last``."""
    return " ".join(part for part in (_arg(pos, 0, render), _arg(pos, 1, render)) if part)


def _r_sort(pos: list[str], named: dict[str, str], render: ParamText) -> str:
    """``{{sort|key|text}}`` -> ``text`` (``{{sort|text}}`` -> ``text``)."""
    return _inline(render.text(pos[1] if len(pos) > 1 else pos[0])) if pos else ""


def _r_list(pos: list[str], named: dict[str, str], render: ParamText) -> str:
    """``{{hlist|a|b}}``, ``{{ubl|a|b}}``, ``{{plainlist|* a\n* b}}`` -> ``a, b``."""
    items = []
    for raw in pos:
        for line in render.text(raw).split("\n"):
            item = _inline(line.lstrip("*#:; ").strip())
            if item:
                items.append(item)
    return ", ".join(items)


CLEAN_RENDERERS: dict[str, Renderer] = _RENDERERS | {
    "sortname": _r_sortname, "sort": _r_sort,
    "hlist": _r_list, "flatlist": _r_list, "plainlist": _r_list, "ubl": _r_list, "unbulleted list": _r_list,
    "bulleted list": _r_list,
}  # fmt: skip
"""The ``clean`` style's renderers: :data:`RENDERERS` and the list and sorting templates readers see
(``kilt`` keeps KILT's: it drops them)."""
LANG_PREFIX_RENDERER: Renderer = _r_first
"""The renderer of ``{{lang-xx|text}}`` templates (any language code)."""
COLON_RENDERERS: frozenset[Renderer] = frozenset({_r_formatnum})
"""Renderers that also apply to ``{{name:...}}`` (a parser function, e.g. ``{{formatnum:1234}}``)."""
TEMPLATE_NAME_RE = _TEMPLATE_NAME_RE
template_params = _params
