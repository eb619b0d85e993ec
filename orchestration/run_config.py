"""Dagster run configs derived from the sections of params.yaml, and a section overlaid with a run's."""

from __future__ import annotations

import types
import typing
from typing import Annotated, Any, Literal, TypeVar, Union

import pydantic
from dagster import Config
from pydantic import BaseModel, Field

__all__ = ["section_config", "with_config"]

SectionT = TypeVar("SectionT", bound=BaseModel)


def section_config(section: type[BaseModel], doc: str, *, exclude: tuple[str, ...] = ()) -> type[Config]:
    """A Dagster ``Config`` whose fields are those of the params ``section`` (its nested sections and
    ``exclude`` left out), each unset (None) by default and described by the section field's docstring:
    the run config of an asset that takes that section. Nothing is restated: a field added to the section
    is a field of the run config too, and :func:`with_config` overlays the fields a run sets on
    params.yaml's section, validated by the section's model (a ``Literal`` field is a string in Dagster's
    schema, and its value is checked there). Subclass it to add a run's own options (``force``)."""
    unknown = set(exclude) - set(section.model_fields)
    if unknown:
        raise ValueError(
            f"{section.__name__} has no field {sorted(unknown)[0]!r} to leave out of its run config"
        )
    fields: dict[str, Any] = {}
    for name, info in section.model_fields.items():
        shape = _config_shape(info.annotation)
        if name in exclude or shape is None:
            continue
        fields[name] = (shape | None, Field(None, description=info.description))
    name = section.__name__.removesuffix("Params") + "SectionConfig"
    return pydantic.create_model(name, __base__=Config, __doc__=doc, **fields)  # type: ignore[call-overload]


def _config_shape(annotation: Any) -> Any:
    """The type Dagster's config schema can hold for a section field's type (None: a nested section)."""
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return _config_shape(typing.get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        kept = [_config_shape(arg) for arg in typing.get_args(annotation) if arg is not type(None)]
        return kept[0] if len(kept) == 1 else typing.Union[tuple(kept)]  # noqa: UP007
    if origin is Literal:
        return type(typing.get_args(annotation)[0])
    if origin in (tuple, list):
        return list[_config_shape(typing.get_args(annotation)[0])]
    if origin is dict:
        key, value = typing.get_args(annotation)
        return dict[key, str if value is Any else _config_shape(value)]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return None
    return annotation


def with_config(section: SectionT, config: BaseModel) -> SectionT:
    """``section`` of params.yaml overlaid with the fields of a Dagster ``config`` that are set (not None):
    run config overrides params.yaml, field by field, and is validated as params.yaml is."""
    fields = type(section).model_fields
    return section.replace(**{name: value for name, value in config.model_dump().items() if name in fields})
