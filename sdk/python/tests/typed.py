"""Checks a JSON value against an annotation of agentmem.types at run time:
TypedDicts (required members present, no member the type does not name),
Literal, Union, List, Dict, the scalars. What the SDK's generated types say
a reply is, the reply must be."""

from __future__ import annotations

import re
import typing

from agentmem import types

_NAMESPACE = vars(types)


def resolve(annotation):
    if isinstance(annotation, str):
        return eval(annotation, _NAMESPACE)  # a type expression of the generated module
    return annotation


def check(value, annotation, path: str = "reply") -> list:
    """The ways value is not of annotation (an empty list when it is)."""
    t = resolve(annotation)
    origin = typing.get_origin(t)
    if t is typing.Any:
        return []
    if t is None or t is type(None):
        return [] if value is None else [f"{path}: {value!r} is not null"]
    if origin is typing.Union:
        for alt in typing.get_args(t):
            if not check(value, alt, path):
                return []
        return [f"{path}: {str(value)[:80]!r} is none of {t}"]
    if origin is typing.Literal:
        return [] if value in typing.get_args(t) else [f"{path}: {value!r} is not one of {typing.get_args(t)}"]
    if origin in (list, typing.List):
        if not isinstance(value, list):
            return [f"{path}: not a list"]
        (item,) = typing.get_args(t)
        return [e for i, v in enumerate(value) for e in check(v, item, f"{path}[{i}]")]
    if origin in (dict, typing.Dict):
        if not isinstance(value, dict):
            return [f"{path}: not an object"]
        _, item = typing.get_args(t)
        return [e for k, v in value.items() for e in check(v, item, f"{path}.{k}")]
    if typing.is_typeddict(t):
        if not isinstance(value, dict):
            return [f"{path}: not an object ({t.__name__})"]
        hints = typing.get_type_hints(t, _NAMESPACE)
        errs = [f"{path}: {t.__name__} has no member {k}" for k in value if k not in hints]
        errs += [f"{path}: {t.__name__}.{k} is missing" for k in t.__required_keys__ if k not in value]
        for k, v in value.items():
            if k in hints:
                errs += check(v, hints[k], f"{path}.{k}")
        return errs
    scalar = {str: str, int: int, float: (int, float), bool: bool}.get(t)
    if scalar is not None:
        ok = isinstance(value, scalar) and not (t is not bool and isinstance(value, bool))
        return [] if ok else [f"{path}: {value!r} is not {t.__name__}"]
    if t is dict:
        return [] if isinstance(value, dict) else [f"{path}: not an object"]
    return [f"{path}: cannot check {t}"]


def operation_of(method: str, path: str):
    """The generated OPERATIONS entry of a concrete path (/v1/session/s1/append)."""
    for name, (m, template, request, reply) in types.OPERATIONS.items():
        pattern = "^" + re.sub(r"\{[a-z_]+\}", "[^/]+", template) + "$"
        if m == method and re.match(pattern, path):
            return name, request, reply
    return None
