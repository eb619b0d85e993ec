"""A statement's value, typed (:class:`Value`) and written as a reader reads it (:func:`render_value`).

Wikibase's value types: an entity (item, property, lexeme ...), a time with its precision (a day, a month,
a year, a decade, a century, a millennium ...; years before the common era as BCE), a quantity with its
unit (an entity) and bounds, a string (also external ids, URLs, media files, math), monolingual text, a
globe coordinate, each decoded from the dump's JSON into a small struct of the fields read (the reader
leaves a value undecoded until it is asked for). ``somevalue`` / ``novalue`` snaks and unknown value types
are not facts a passage can state: :func:`snak_value` says why it has no value, and the caller counts
them.

Pure module: no Dagster import.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

__all__ = ["ID_DIGITS", "Value", "is_entity_id", "render_value", "row_value", "snak_value", "time_text"]

ENTITY_URI = "http://www.wikidata.org/entity/"
MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


@dataclass(frozen=True, slots=True)
class Value:
    """A snak's value: ``kind`` is ``entity``, ``time``, ``quantity``, ``string``, ``monolingualtext`` or
    ``coordinate``; ``object`` the entity id (an entity, or a quantity's unit in ``unit``); ``value`` the
    canonical literal (an entity's id, ``+1975-11-11T00:00:00Z``, ``+1246700``, the string, the text,
    ``lat,lon``); ``precision`` a time's (Wikibase's 0–14) or a coordinate's; ``language`` a text's."""

    kind: str
    value: str
    object: str | None = None
    precision: float | None = None
    unit: str | None = None
    language: str | None = None


def row_value(row: dict[str, Any]) -> Value:
    """The :class:`Value` of a statements-table row (its ``kind``, ``value``, ``object``, ``precision``,
    ``unit`` and ``language`` columns)."""
    return Value(
        row["kind"],
        row["value"],
        object=row["object"],
        precision=row["precision"],
        unit=row["unit"],
        language=row["language"],
    )


class _EntityValue(msgspec.Struct, gc=False):
    id: str | None = None
    numeric_id: int | None = msgspec.field(default=None, name="numeric-id")
    entity_type: str = msgspec.field(default="item", name="entity-type")


class _TimeValue(msgspec.Struct, gc=False):
    time: str
    precision: int = 11


class _QuantityValue(msgspec.Struct, gc=False):
    amount: str
    unit: str = "1"


class _TextValue(msgspec.Struct, gc=False):
    text: str
    language: str = ""


class _CoordinateValue(msgspec.Struct, gc=False):
    latitude: float
    longitude: float
    precision: float | None = None


_VALUE_TYPES: dict[str, type] = {
    "wikibase-entityid": _EntityValue,
    "time": _TimeValue,
    "quantity": _QuantityValue,
    "string": str,
    "monolingualtext": _TextValue,
    "globecoordinate": _CoordinateValue,
}
"""Each Wikibase value type and the struct its JSON is decoded into (only these fields are built)."""
_DECODERS = {kind: msgspec.json.Decoder(struct) for kind, struct in _VALUE_TYPES.items()}
_ENTITY_PREFIXES = {"item": "Q", "property": "P", "lexeme": "L"}


ID_DIGITS = 18
"""Digits of the largest entity number read (Wikidata's are 9): every id fits the KB graph's int64 codes."""


def is_entity_id(text: Any, prefixes: str = "QPL") -> bool:
    """Whether ``text`` is an entity id ``<prefix><n>`` (``Q42``, ``P31``): one of ``prefixes``, then 1 to
    :data:`ID_DIGITS` ASCII digits without a leading zero."""
    return (
        isinstance(text, str)
        and 2 <= len(text) <= ID_DIGITS + 1
        and text[0] in prefixes
        and text[1:].isascii()
        and text[1:].isdigit()
        and text[1] != "0"
    )


def snak_value(snak: Any) -> Value | str:
    """The value of a snak (a :class:`~assets.wikidata.reader.Snak`, its datavalue's JSON undecoded, or a
    dict), or the reason it has none: ``somevalue``, ``novalue``, ``unknown_type:<type>`` or
    ``malformed:<type>``."""
    snaktype = snak.snaktype if hasattr(snak, "snaktype") else snak.get("snaktype")
    if snaktype != "value":
        return str(snaktype)
    datavalue = snak.datavalue if hasattr(snak, "datavalue") else snak.get("datavalue")
    if datavalue is None:
        return "malformed:no_datavalue"
    kind, value = (
        (datavalue.type, datavalue.value)
        if hasattr(datavalue, "type")
        else (datavalue.get("type"), datavalue.get("value"))
    )
    if kind not in _VALUE_TYPES:
        return f"unknown_type:{kind}"
    try:
        typed = (
            _DECODERS[kind].decode(value)
            if isinstance(value, msgspec.Raw)
            else msgspec.convert(value, _VALUE_TYPES[kind])
        )
        return _typed(kind, typed)
    except (msgspec.ValidationError, msgspec.DecodeError, ValueError, RecursionError):
        return f"malformed:{kind}"


def _typed(kind: str, value: Any) -> Value | str:
    if kind == "wikibase-entityid":
        entity = value.id
        if entity is None and value.numeric_id is not None and value.entity_type in _ENTITY_PREFIXES:
            entity = f"{_ENTITY_PREFIXES[value.entity_type]}{value.numeric_id}"
        return (
            Value("entity", entity, object=entity) if is_entity_id(entity) else "malformed:wikibase-entityid"
        )
    if kind == "time":
        return Value("time", value.time, precision=float(value.precision))
    if kind == "quantity":
        unit = value.unit
        unit_id = unit[len(ENTITY_URI) :] if unit.startswith(ENTITY_URI) else None
        unit_id = unit_id if is_entity_id(unit_id) else None
        return Value("quantity", value.amount, unit=unit_id)
    if kind == "string":
        return Value("string", value)
    if kind == "monolingualtext":
        return Value("monolingualtext", value.text, language=value.language)
    return Value(
        "coordinate",
        f"{value.latitude},{value.longitude}",
        precision=float(value.precision) if value.precision is not None else None,
    )


def time_text(time: str, precision: float | None) -> str:
    """``+1975-11-11T00:00:00Z`` as a reader reads it at its precision: ``11 November 1975`` (day),
    ``November 1975`` (month), ``1975`` (year), ``1970s`` (decade), ``20th century``, ``2nd millennium``,
    ``500 BCE``; a time that is not Wikibase's form is given as written."""
    sign = -1 if time.startswith("-") else 1
    body = time.lstrip("+-")
    date, _, _ = body.partition("T")
    parts = date.split("-")
    try:
        year, month, day = int(parts[0]), int(parts[1]), int(parts[2])
    except (ValueError, IndexError):
        return time
    level = int(precision) if precision is not None else 11
    era = " BCE" if sign < 0 else ""
    if level >= 11 and 1 <= month <= 12 and day >= 1:
        return f"{day} {MONTHS[month - 1]} {year}{era}"
    if level == 10 and 1 <= month <= 12:
        return f"{MONTHS[month - 1]} {year}{era}"
    if level == 9 or (level >= 10):
        return f"{year}{era}"
    if level == 8:
        return f"{year - year % 10}s{era}"
    if level == 7:
        return f"{_ordinal((year - 1) // 100 + 1)} century{era}"
    if level == 6:
        return f"{_ordinal((year - 1) // 1000 + 1)} millennium{era}"
    return f"{year:,} years{' ago' if sign < 0 else ''}"


def _ordinal(number: int) -> str:
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


def _number(amount: str) -> str:
    text = amount.lstrip("+")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _coordinate(value: str) -> str:
    latitude, longitude = (float(part) for part in value.split(","))
    north = "N" if latitude >= 0 else "S"
    east = "E" if longitude >= 0 else "W"
    return f"{abs(latitude):.4g}°{north}, {abs(longitude):.4g}°{east}"


def render_value(value: Value, label: Callable[[str], str]) -> str:
    """``value`` as text: an entity by ``label(id)``, a time at its precision, a quantity with its unit's
    label, a coordinate in degrees."""
    if value.kind == "entity":
        return label(value.value)
    if value.kind == "time":
        return time_text(value.value, value.precision)
    if value.kind == "quantity":
        number = _number(value.value)
        return f"{number} {label(value.unit)}" if value.unit else number
    if value.kind == "coordinate":
        return _coordinate(value.value)
    return value.value
