"""Builtin options tables decoded straight from the file, with a layout read off LiteRT's schema.

The schema's generated Python (``ai_edge_litert.schema_py_generated``) has one accessor per
field, e.g. ``ReshapeOptions.NewShape`` reading vtable slot 4 as a vector of ``Int32Flags``. This
module reads those accessors' source once per options type and keeps, per field: the key the
object API would give it (``new_shape``), its vtable offset, its kind (scalar, vector of scalars
or string), its struct format and its default (from the ``...T`` class). Decoding one table is
then a few ``struct.unpack_from`` calls instead of the object API's objects, numpy views and
recursion, and gives the same dict as ``_plain(S.BuiltinOptionsCreator(...))`` did
(tests/model/test_reader_options.py checks every options table of every shared model).

A type whose accessors do not parse (nested tables, unions, structs: none in LiteRT's schema
today) gets ``None`` from :func:`layout`; the reader then uses the object API for it.

Reading the generated source costs tens of ms and MB (``inspect`` parses the 20k-line module),
so the layouts are stored in :mod:`viewer.model._options_table`, written by
``python -m viewer.model._options`` and checked against the installed schema by
tests/model/test_reader_options.py; a type missing from it (a newer schema) is derived at run
time.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from functools import lru_cache

from ai_edge_litert import schema_py_generated as S

#: BuiltinOptions / BuiltinOptions2 union value -> table name, e.g. 11 -> "ReshapeOptions".
OPTIONS_NAMES = {v: k for k, v in vars(S.BuiltinOptions).items() if not k.startswith("_")}
OPTIONS2_NAMES = {v: k for k, v in vars(S.BuiltinOptions2).items() if not k.startswith("_")}

#: flatbuffers number type -> (struct format, bytes).
_FLAGS = {
    "BoolFlags": ("<?", 1), "Uint8Flags": ("<B", 1), "Int8Flags": ("<b", 1),
    "Uint16Flags": ("<H", 2), "Int16Flags": ("<h", 2), "Uint32Flags": ("<I", 4),
    "Int32Flags": ("<i", 4), "Uint64Flags": ("<Q", 8), "Int64Flags": ("<q", 8),
    "Float32Flags": ("<f", 4), "Float64Flags": ("<d", 8),
}
KIND_SCALAR, KIND_VECTOR, KIND_STRING = "scalar", "vector", "string"

_METHOD = re.compile(r"    def ([A-Z]\w*)\(self(?:, j)?\):\n(.*?)(?=\n    #|\n    @|\n    def |\Z)", re.S)
_OFFSET = re.compile(r"_tab\.Offset\((\d+)\)")
_NUMBER = re.compile(r"number_types\.(\w+Flags)")


@dataclass(frozen=True)
class Field:
    """One field of an options table: ``key`` (snake_case), vtable offset, kind, format, default."""

    key: str
    voffset: int
    kind: str
    fmt: str = ""
    size: int = 0
    default: object = None


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


@lru_cache(maxsize=None)
def layout(table_name: str) -> tuple[Field, ...] | None:
    """The fields of options table ``table_name`` (e.g. ``"Conv2DOptions"``), or None.

    From the stored table when it has the type, otherwise :func:`derive_layout`.
    """
    from viewer.model._options_table import LAYOUTS

    stored = LAYOUTS.get(table_name, False)
    if stored is False:
        return derive_layout(table_name)
    return None if stored is None else tuple(Field(*f) for f in stored)


def derive_layout(table_name: str) -> tuple[Field, ...] | None:
    """The fields of options table ``table_name`` read off the generated accessors, or None.

    None when the generated accessors are not all scalars, vectors of scalars or strings, or
    do not match the object API's attributes one to one (the caller falls back to the object
    API).
    """
    obj_cls = getattr(S, table_name + "T", None)
    src = _class_source(table_name)
    if obj_cls is None or src is None:
        return None
    try:
        defaults = vars(obj_cls())
    except TypeError:
        return None
    fields = []
    for m in _METHOD.finditer(src):
        meth, body = m.group(1), m.group(2)
        if meth == "Init" or meth.endswith(("AsNumpy", "Length", "IsNone")):
            continue
        attr = meth[0].lower() + meth[1:]
        off, num = _OFFSET.search(body), _NUMBER.findall(body)
        if attr not in defaults or off is None:
            return None
        flags = [n for n in num if n != "UOffsetTFlags"]
        if "Indirect" in body or "Union" in body or "Init(self._tab.Bytes" in body:
            return None
        if "Vector(o)" in body:
            if "String(" in body or not flags or flags[0] not in _FLAGS:
                return None
            kind = KIND_VECTOR
        elif "String(" in body:
            kind = KIND_STRING
        elif flags and flags[0] in _FLAGS:
            kind = KIND_SCALAR
        else:
            return None
        fmt, size = _FLAGS[flags[0]] if kind != KIND_STRING else ("", 0)
        default = defaults[attr]
        if kind == KIND_SCALAR and "bool(" in body:
            fmt = "<?"
        fields.append(Field(_snake(attr), int(off.group(1)), kind, fmt, size, default))
    if len(fields) != len(defaults):
        return None
    return tuple(fields)


@lru_cache(maxsize=1)
def _module_source() -> str:
    try:
        return inspect.getsource(S)
    except (OSError, TypeError):
        return ""


def _class_source(name: str) -> str | None:
    """Source of ``class name(object):`` in the generated module, up to the next top-level line."""
    src = _module_source()
    m = re.search(rf"^class {re.escape(name)}\(object\):\n", src, re.M)
    if m is None:
        return None
    end = re.compile(r"^\S", re.M).search(src, m.end())
    return src[m.start():end.start() if end else len(src)]


def all_table_names() -> list[str]:
    """Every options table name of both unions, sorted."""
    return sorted({n for n in (*OPTIONS_NAMES.values(), *OPTIONS2_NAMES.values()) if n != "NONE"})


def _generate() -> str:
    lines = ['"""Options table layouts derived from ai_edge_litert.schema_py_generated.',
             "",
             "Written by ``python -m viewer.model._options``; do not edit. Checked against the",
             'installed schema by tests/model/test_reader_options.py.',
             '"""', "", "LAYOUTS = {"]
    for name in all_table_names():
        fields = derive_layout(name)
        if fields is None:
            lines.append(f"    {name!r}: None,")
            continue
        lines.append(f"    {name!r}: (")
        lines.extend(f"        {(fl.key, fl.voffset, fl.kind, fl.fmt, fl.size, fl.default)!r}," for fl in fields)
        lines.append("    ),")
    lines.append("}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    from pathlib import Path

    Path(__file__).with_name("_options_table.py").write_text(_generate())
