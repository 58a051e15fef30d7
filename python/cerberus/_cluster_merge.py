"""Merging the devices' answers for :mod:`cerberus.cluster`: the engine's order of values,
stats added up, and the Arrow tables of a ``find``'s parts given one schema and cut to its
limit."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Tuple, Union

# The least JSON number: a `$gte` on it matches every number and nothing else (comparisons
# stay within a JSON type), which counts the values an `avg` averages.
_LEAST_NUMBER = -1.7976931348623157e308


def _scalar_rank(v: Any) -> Tuple[Any, ...]:
    """The engine's order of secondary keys (null < booleans < numbers < strings, strings by
    their UTF-8 bytes), which ``top``, ``min`` and ``max`` follow."""
    if v is None:
        return (0,)
    if isinstance(v, bool):
        return (1, v)
    if isinstance(v, (int, float)):
        return (2, float(v))
    if isinstance(v, str):
        return (3, v.encode("utf-8"))
    return (4, json.dumps(v, sort_keys=True))


def _number(x: float) -> Union[int, float]:
    """A number as the engine answers one: integral values within 2^53 as integers."""
    return int(x) if float(x).is_integer() and abs(x) <= 2**53 else float(x)


def _and(filter: Optional[Dict[str, Any]], cond: Dict[str, Any]) -> Dict[str, Any]:
    return {"$and": [filter, cond]} if filter else cond


def _pk_bytes(pk: Union[str, bytes]) -> bytes:
    """A primary key as answered (``str`` where UTF-8) as bytes, which order keys."""
    return pk.encode("utf-8") if isinstance(pk, str) else pk


def _add(a: Any, b: Any) -> Any:
    """Two parts' stats added: numbers summed, dicts key by key, lists (per level, per
    search step) item by item; anything else (names, flags) as the first part has it."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a + b
    if isinstance(a, dict) and isinstance(b, dict):
        return {k: _add(a[k], b[k]) if k in a and k in b else a.get(k, b.get(k))
                for k in {**a, **b}}
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [_add(x, y) for x, y in zip(a, b)]
    return a


def _add_stats(parts: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The tenant's stats: the parts' added up, except what is not a count: ``nsid`` (each
    device's own, under ``parts``), ``shares`` (the first part's settings) and a
    ``capacity`` that is ``None`` (no bound) when one part has none."""
    total: Dict[str, Any] = dict(parts[0])
    for s in parts[1:]:
        total = _add(total, s)
    total.pop("nsid", None)
    if "shares" in parts[0]:
        total["shares"] = parts[0]["shares"]
    if any(s.get("capacity") is None for s in parts):
        total["capacity"] = None
    return total


def _unify_type(pa: Any, a: Any, b: Any) -> Any:
    """Two parts' types of one column as one device would infer them over both parts'
    records: null gives way, integers with floats are floats, objects merge their fields,
    other mixes are strings (as the device's inference makes them)."""
    if a == b or pa.types.is_null(b):
        return a
    if pa.types.is_null(a):
        return b
    try:
        return pa.unify_schemas([pa.schema([("c", a)]), pa.schema([("c", b)])],
                                promote_options="permissive").field("c").type
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return pa.binary() if pa.types.is_binary(a) or pa.types.is_binary(b) else pa.string()


def _find_plan(tables: List[Any], limit: Optional[int]) -> Tuple[Any, Optional[bytes]]:
    """The schema every partition is given (``_pk`` first, then the attributes in the order
    the parts show them) and, with a limit, the greatest pk kept (the ``limit``-th over all
    parts)."""
    import pyarrow as pa

    types: Dict[str, Any] = {"_pk": pa.string()}
    for t in tables:
        for field in t.schema:
            name = field.name
            types[name] = _unify_type(pa, types[name], field.type) if name in types else field.type
    schema = pa.schema(list(types.items()))
    cut = None
    if limit is not None:
        pks = sorted(_pk_bytes(p) for t in tables if "_pk" in t.column_names
                     for p in t.column("_pk").to_pylist())
        cut = pks[limit - 1] if 0 < limit <= len(pks) else (b"" if limit <= 0 else None)
    return schema, cut


def _conform(table: Any, plan: Tuple[Any, Optional[bytes]]) -> Any:
    """One part's table with the plan's columns and types, cut to the kept pks, as pandas."""
    import pyarrow as pa

    schema, cut = plan
    n = table.num_rows
    columns = []
    for field in schema:
        if field.name in table.column_names:
            col = table.column(field.name)
            if col.type != field.type:
                try:
                    col = col.cast(field.type)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                    pass  # kept as the device gave it: pandas concatenates it as objects
            columns.append((field.name, col))
        else:
            columns.append((field.name, pa.nulls(n, field.type)))
    out = pa.table({name: col for name, col in columns})
    if cut is not None:
        keep = [_pk_bytes(p) <= cut for p in out.column("_pk").to_pylist()]
        out = out.filter(pa.array(keep, pa.bool_()))
    return out.to_pandas()
