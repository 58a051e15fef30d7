"""Cerberus from Python: a device over the network (:func:`connect`, on its native wire or
NVMe/TCP) or an embedded database in this process (:func:`open`), with the same namespace
calls on both.

>>> import cerberus
>>> with cerberus.open("/tmp/demo-db") as db:            # doctest: +SKIP
...     ns = db.create_namespace("app")
...     ns.put(b"user:1", b'{"name": "ada"}')
...     ns.get(b"user:1")
b'{"name": "ada"}'

Keys and values are ``bytes`` (``str`` is accepted and stored as UTF-8); reads return
``bytes``. Every error is a :class:`CerberusError`, subclassed by the device's status codes
(:class:`KeyNotFound`, :class:`AccessDenied`, :class:`InvalidNamespace`, ...), whether a
device or an embedded database raised it. Calls release the GIL while the engine or the
network works.
"""

from __future__ import annotations

import builtins
import errno
import json
import os
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

from . import _cerberus
from ._cerberus import (
    AccessDenied,
    CapacityExceeded,
    CerberusError,
    ConnectionError,
    Corrupted,
    IndexExists,
    IndexLimit,
    IndexNotFound,
    InternalError,
    InvalidField,
    InvalidKeySize,
    InvalidNamespace,
    InvalidOpcode,
    InvalidValueSize,
    IteratorLimit,
    IteratorNotFound,
    KeyExists,
    KeyNotFound,
    NamespaceExists,
    ReplyTooLarge,
    ShuttingDown,
    StorageError,
    UnsupportedVersion,
)

# The largest k a top-K query document carries (the engine reads it as a signed 64-bit
# count): a larger k asks for every record, which this one does too.
_MAX_K = 2**63 - 1

__all__ = [
    "open",
    "connect",
    "Db",
    "Device",
    "Namespace",
    "Batch",
    "FindResult",
    "CerberusError",
    "AccessDenied",
    "CapacityExceeded",
    "ConnectionError",
    "Corrupted",
    "IndexExists",
    "IndexLimit",
    "IndexNotFound",
    "InternalError",
    "InvalidField",
    "InvalidKeySize",
    "InvalidNamespace",
    "InvalidOpcode",
    "InvalidValueSize",
    "IteratorLimit",
    "IteratorNotFound",
    "KeyExists",
    "KeyNotFound",
    "NamespaceExists",
    "ReplyTooLarge",
    "ShuttingDown",
    "StorageError",
    "UnsupportedVersion",
    "connect_cluster",
    "Cluster",
    "ClusterNamespace",
    "ClusterDeviceError",
    "TenantMoving", "NamespaceReadOnly",
]

Bytesish = Union[bytes, bytearray, memoryview, str]


class Batch:
    """Puts and deletes collected, then written together when the ``with`` block ends
    without an exception: all or none (on a device, one ``WriteBatch`` command of at most
    16,384 writes)."""

    def __init__(self, ns: "Namespace") -> None:
        self._ns = ns
        self.puts: List[Tuple[Bytesish, Bytesish]] = []
        self.deletes: List[Bytesish] = []

    def put(self, key: Bytesish, value: Bytesish) -> None:
        self.puts.append((key, value))

    def delete(self, key: Bytesish) -> None:
        self.deletes.append(key)

    def __enter__(self) -> "Batch":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self._ns.write_batch(puts=self.puts, deletes=self.deletes)


def _row(pk: bytes, value: bytes) -> Dict[str, Any]:
    """A found record as a dict: its JSON object (or ``{"value": ...}`` for another JSON
    value) with its primary key under ``_pk``; a keys-only find's (empty value) is
    ``{"_pk": pk}``."""
    if not value:
        return {"_pk": _pk(pk)}
    row = json.loads(value)
    if not isinstance(row, dict):
        row = {"value": row}
    row["_pk"] = _pk(pk)
    return row


def _pk_first(table: Any) -> Any:
    if "_pk" in table.column_names:
        order = ["_pk"] + [c for c in table.column_names if c != "_pk"]
        table = table.select(order)
    return table


def _pk(b: bytes) -> Union[str, bytes]:
    """A primary key as ``str`` when it is UTF-8 (what loaders of JSON lines write), else
    ``bytes``."""
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return b


def _top_rows(records: List[Tuple[bytes, bytes]], summary: Dict[str, Any], by: str) -> List[Any]:
    """A top query's answer as (ranked value, pk, row: projection, ``by``, ``_pk``)."""
    out = []
    for (pk, proj), key in zip(records, summary.get("keys", [])):
        row = json.loads(proj) if proj else {}
        row = row if isinstance(row, dict) else {"value": row}
        row.setdefault(by, key)
        row["_pk"] = _pk(pk)
        out.append((key, pk, row))
    return out


class FindResult:
    """The records a find matched, fetched a page at a time as they are iterated (each page
    one query; the device resumes from the page's continuation). Iterating yields one dict
    per record: the record's JSON object (or its projection) with its primary key under
    ``"_pk"``. ``list(result)``, :meth:`to_arrow` and :meth:`to_pandas` take them all."""

    def __init__(self, ns: "Namespace", doc: Dict[str, Any]) -> None:
        self._ns = ns
        self._doc = doc
        self._cache: Optional[List[Dict[str, Any]]] = None
        #: Pages fetched so far, and the engine's statistics of the last one.
        self.pages = 0
        self.stats: Optional[Dict[str, Any]] = None

    def _pages(self) -> Iterator[List[Tuple[bytes, bytes]]]:
        doc = dict(self._doc)
        while True:
            records, summary = self._ns._query(doc)
            self.pages += 1
            self.stats = summary.get("stats")
            yield records
            cont = summary.get("continuation")
            if not cont:
                return
            doc["continuation"] = cont

    def __iter__(self) -> Iterator[Dict[str, Any]]:
        if self._cache is not None:
            yield from self._cache
            return
        for page in self._pages():
            for pk, value in page:
                yield _row(pk, value)

    def to_list(self) -> List[Dict[str, Any]]:
        """Every record as a dict (kept: later calls reuse them)."""
        if self._cache is None:
            self._cache = list(iter(self))
        return self._cache

    def to_arrow(self) -> Any:
        """The records as a ``pyarrow.Table`` (``_pk`` first: strings where every key is
        UTF-8, else bytes; then one column per attribute, types inferred over every record).
        The pages are fetched and decoded into Arrow record batches in Rust, with no Python
        object per record, unless a value is not a JSON object (the rows are then built as
        dicts)."""
        try:
            import pyarrow
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError("to_arrow() needs pyarrow: pip install pyarrow") from e
        if self._cache is not None:
            return _pk_first(pyarrow.Table.from_pylist(self._cache))
        # Every page fetched and decoded into Arrow columns in Rust; None where the values
        # are not all JSON objects (the rows are then built here).
        table, pages, summary = self._ns._native.find_arrow(
            json.dumps(self._doc), bool(self._doc.get("keys_only")))
        self.pages += pages
        self.stats = json.loads(summary).get("stats")
        if table is not None:
            return table
        # Values that are not all JSON objects: the rows as dicts, fetched again.
        self.pages = 0
        return _pk_first(pyarrow.Table.from_pylist(self.to_list()))

    def to_pandas(self) -> Any:
        """The records as a ``pandas.DataFrame`` (through :meth:`to_arrow`)."""
        try:
            import pandas  # noqa: F401
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError("to_pandas() needs pandas: pip install pandas pyarrow") from e
        return self.to_arrow().to_pandas()


class Namespace:
    """One tenant's keys: the data calls of a namespace, on a device or an embedded
    database (:meth:`Db.namespace`, :meth:`Device.namespace`)."""

    def __init__(self, native: Any, name: Optional[str] = None, secret: Optional[str] = None) -> None:
        self._native = native
        self._name = name
        #: The namespace's credential, when this handle created it on a device.
        self.secret = secret

    @property
    def nsid(self) -> int:
        """The namespace's id (ids are never reused)."""
        return self._native.nsid

    @property
    def name(self) -> Optional[str]:
        """The namespace's name (``None`` for a device namespace opened by id)."""
        return self._name

    def __repr__(self) -> str:
        return f"Namespace(nsid={self.nsid}, name={self._name!r})"

    def put(self, key: Bytesish, value: Bytesish) -> None:
        """Stores ``value`` under ``key``, replacing any value it had."""
        self._native.put(key, value)

    def get(self, key: Bytesish) -> Optional[bytes]:
        """The value of ``key``, or ``None`` if it has none."""
        return self._native.get(key)

    def __getitem__(self, key: Bytesish) -> bytes:
        v = self._native.get(key)
        if v is None:
            raise KeyNotFound(f"key {key!r} does not exist")
        return v

    def __setitem__(self, key: Bytesish, value: Bytesish) -> None:
        self._native.put(key, value)

    def __contains__(self, key: Bytesish) -> bool:
        return self._native.contains(key)

    def delete(self, key: Bytesish) -> bool:
        """Deletes ``key``; returns whether it had a value."""
        return self._native.delete(key)

    def contains(self, key: Bytesish) -> bool:
        """Whether ``key`` has a value, without reading the value (``key in ns`` too)."""
        return self._native.contains(key)

    def delete_range(self, start: Bytesish, end: Optional[Bytesish] = None) -> int:
        """Deletes every key from ``start`` (inclusive) to ``end`` (exclusive; ``None`` or
        empty: to the last key) and returns how many. In atomic batches (on a device,
        commands of at most its ``max_delete_range_keys`` keys), not atomic as a whole: a key
        written meanwhile into the part already passed stays."""
        return self._native.delete_range(start, b"" if end is None else end)

    def delete_prefix(self, prefix: Bytesish) -> int:
        """Deletes every key that begins with ``prefix`` and returns how many, as
        :meth:`delete_range` does."""
        return self._native.delete_prefix(prefix)

    def get_many(self, keys: List[Bytesish]) -> List[Optional[bytes]]:
        """Values of ``keys`` in order (``None`` where absent): one batched engine read on an
        embedded database, pipelined on a device (where the device batches them)."""
        return self._native.get_many(list(keys))

    def write_batch(self, puts: Optional[List[Tuple[Bytesish, Bytesish]]] = None, deletes: Optional[List[Bytesish]] = None) -> None:
        """Writes ``puts`` then ``deletes``, all or none (on a device, one ``WriteBatch``
        command)."""
        self._native.write_batch(list(puts or []), list(deletes or []))

    def batch(self) -> Batch:
        """A :class:`Batch` for a ``with`` block."""
        return Batch(self)

    def scan(self, start: Optional[Bytesish] = None, end: Optional[Bytesish] = None, prefix: Optional[Bytesish] = None, keys_only: bool = False) -> Iterator[Tuple[bytes, bytes]]:
        """``(key, value)`` pairs in key order at one snapshot: from ``start`` (inclusive) to
        ``end`` (exclusive), only keys beginning with ``prefix`` if given. On a device the
        entries come in batches over one device iterator."""
        return self._native.scan(start, end, prefix, keys_only)

    def keys(self, start: Optional[Bytesish] = None, end: Optional[Bytesish] = None, prefix: Optional[Bytesish] = None) -> Iterator[bytes]:
        """Keys in order, reading no values."""
        return (k for k, _ in self._native.scan(start, end, prefix, True))

    def create_index(self, attr: str, kind: str = "vas", exist_ok: bool = False) -> None:
        """Indexes JSON attribute ``attr`` (a dotted path for embedded objects) of the
        namespace's values; ``kind`` is ``"vas"`` (entries point at the value) or
        ``"classic"``. An index on ``attr`` already there raises :class:`IndexExists`, unless
        ``exist_ok`` and it is of this kind (as ``os.makedirs``)."""
        try:
            self._native.create_index(attr, kind)
        except IndexExists:
            if not exist_ok or not any(
                i.get("attr") == attr and str(i.get("kind", "")).lower() == kind.lower()
                for i in self.list_indexes()
            ):
                raise

    def drop_index(self, attr: str) -> None:
        self._native.drop_index(attr)

    def list_indexes(self) -> List[Dict[str, Any]]:
        return json.loads(self._native.list_indexes_json())

    def stats(self) -> Dict[str, Any]:
        """The namespace's counters (its tree per level, lookups, pages read), its space
        (``used_bytes``, ``index_bytes``, ``pending_bytes``, ``garbage_bytes``) and settings
        (``capacity``, ``shares``)."""
        return json.loads(self._native.stats_json())

    def configure(self, capacity: Optional[int] = None, weight: Optional[int] = None,
                  reservation_ops: Optional[int] = None, reservation_bytes: Optional[int] = None,
                  limit_ops: Optional[int] = None, limit_bytes: Optional[int] = None) -> None:
        """Changes the settings given; the others stay. ``capacity=0`` removes the capacity
        (a capacity below what the namespace holds refuses its growth only). On a device
        the connection must hold the admin secret."""
        self._native.configure(**_settings(capacity, weight, reservation_ops,
                                           reservation_bytes, limit_ops, limit_bytes))

    def _query(self, doc: Dict[str, Any]) -> Tuple[List[Tuple[bytes, bytes]], Dict[str, Any]]:
        records, summary = self._native.query_json(json.dumps(doc))
        return records, json.loads(summary)

    def find(self, filter: Optional[Dict[str, Any]] = None, project: Optional[List[str]] = None, limit: Optional[int] = None, page_bytes: Optional[int] = None, keys_only: bool = False) -> FindResult:
        """Records whose JSON values match ``filter`` (MongoDB-style, as the CLI's
        ``--filter``: ``{"city": "Oslo", "stars": {"$gte": 4}}``), through an index where one
        covers it; ``project`` keeps only those attribute paths; pages of at most
        ``page_bytes`` are fetched as the result is iterated. ``keys_only`` returns pks only
        (rows ``{"_pk": pk}``; not with ``project``): where the index read decides the whole
        filter (every condition on its attribute) they come from its entries alone, no
        record read."""
        doc: Dict[str, Any] = {"op": "find", "filter": filter or {}}
        if project is not None:
            doc["project"] = list(project)
        if keys_only:
            doc["keys_only"] = True
        if limit is not None:
            doc["limit"] = limit
        if page_bytes is not None:
            doc["page_bytes"] = page_bytes
        return FindResult(self, doc)

    def get_by_secondary(self, attr: str, value: Any, limit: Optional[int] = None) -> List[Union[str, bytes]]:
        """Primary keys of the records whose indexed ``attr`` equals ``value`` (reads the
        index only)."""
        doc: Dict[str, Any] = {"op": "get_by_secondary", "attr": attr, "value": value}
        if limit is not None:
            doc["limit"] = limit
        records, _ = self._query(doc)
        return [_pk(pk) for pk, _ in records]

    def top(self, by: str, k: int, filter: Optional[Dict[str, Any]] = None, desc: bool = False, project: Optional[List[str]] = None) -> List[Dict[str, Any]]:
        """The ``k`` records ranked first by attribute ``by`` (ascending, or ``desc``) among
        those matching ``filter``: dicts with ``_pk``, the ranked value under ``by``, and the
        projected attributes."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise ValueError(f"k is a whole number of records, 0 or more, not {k!r}")
        # More than any namespace can hold means every record: the same answer, in a number
        # the query document's reader takes (a u64 past 2**63 - 1 would not be).
        k = min(k, _MAX_K)
        doc: Dict[str, Any] = {"op": "top", "filter": filter or {}, "by": by, "desc": desc, "k": k}
        if project is not None:
            doc["project"] = list(project)
        records, summary = self._query(doc)
        return [row for _, _, row in _top_rows(records, summary, by)]

    def aggregate(self, fn: str, attr: Optional[str] = None, filter: Optional[Dict[str, Any]] = None) -> Any:
        """``count``, ``sum``, ``avg``, ``min`` or ``max`` of ``attr`` over the records
        matching ``filter``."""
        doc: Dict[str, Any] = {"op": "aggregate", "filter": filter or {}, "fn": fn}
        if attr is not None:
            doc["attr"] = attr
        _, summary = self._query(doc)
        return summary.get("value")


class Db:
    """An embedded database (:func:`open`). Closes at the end of a ``with`` block."""

    def __init__(self, native: Any) -> None:
        self._native = native

    def __enter__(self) -> "Db":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close()

    def close(self) -> None:
        """Syncs and closes the database; later calls raise :class:`ShuttingDown`."""
        self._native.close()

    def create_namespace(self, name: str, exist_ok: bool = False, capacity: Optional[int] = None,
                         weight: Optional[int] = None, reservation_ops: Optional[int] = None,
                         reservation_bytes: Optional[int] = None, limit_ops: Optional[int] = None,
                         limit_bytes: Optional[int] = None) -> Namespace:
        """Creates a namespace named ``name`` and opens it. A name already taken raises
        :class:`NamespaceExists`, unless ``exist_ok``: then that namespace is opened.
        ``capacity`` bounds its live bytes (writes past it raise :class:`CapacityExceeded`);
        ``weight``, ``reservation_*`` and ``limit_*`` are its I/O shares."""
        settings = _settings(capacity, weight, reservation_ops, reservation_bytes, limit_ops,
                             limit_bytes)
        try:
            return Namespace(self._native.create_namespace(name, **settings), name)
        except NamespaceExists:
            if not exist_ok:
                raise
        return self.namespace(name)

    def _nsid(self, ns: Union[int, str, Namespace]) -> Tuple[int, str]:
        if isinstance(ns, Namespace):
            return ns.nsid, ns.name or ""
        for nsid, name in self._native.list_namespaces():
            if ns == nsid or ns == name:
                return nsid, name
        raise InvalidNamespace(f"no namespace {ns!r}")

    def namespace(self, ns: Union[int, str]) -> Namespace:
        """The namespace with this id or name."""
        nsid, name = self._nsid(ns)
        return Namespace(self._native.namespace(nsid), name)

    def destroy_namespace(self, ns: Union[int, str, Namespace]) -> None:
        """Destroys a namespace and everything in it (its id is never reused)."""
        nsid, _ = self._nsid(ns)
        self._native.destroy_namespace(nsid)

    def list_namespaces(self) -> List[Dict[str, Any]]:
        return [{"nsid": i, "name": n} for i, n in self._native.list_namespaces()]

    def stats(self) -> Dict[str, Any]:
        return json.loads(self._native.stats_json())

    def checkpoint(self, path: Union[str, "os.PathLike[str]"]) -> Dict[str, Any]:
        """Writes a consistent copy of the database to ``path``, a directory that must not
        exist (made with mode 0700), while writes go on: every write acknowledged before the
        call is in it, none after its ``sequence``, a batch whole or not at all. Tables and
        value-log segments are hard-linked where they can be. Open the copy with
        :func:`open`. Returns ``sequence``, ``files_linked``, ``bytes_linked``,
        ``files_copied``, ``bytes_copied`` and the ``namespaces`` (ids) it holds."""
        return json.loads(self._native.checkpoint_json(os.fspath(path)))


def _settings(capacity: Optional[int], weight: Optional[int], reservation_ops: Optional[int],
              reservation_bytes: Optional[int], limit_ops: Optional[int],
              limit_bytes: Optional[int]) -> Dict[str, int]:
    """The namespace settings given (not ``None``), as the native calls take them."""
    given = {"capacity": capacity, "weight": weight, "reservation_ops": reservation_ops,
             "reservation_bytes": reservation_bytes, "limit_ops": limit_ops,
             "limit_bytes": limit_bytes}
    return {k: v for k, v in given.items() if v is not None}


def open(path: str, **options: Any) -> Db:  # noqa: A001 - the package's verb
    """Opens (creating if needed) an embedded database at ``path``. Options are engine
    options: ``cache_bytes``, ``memtable_bytes``, ``sync``, ``block_size``,
    ``filter_bits_per_key``, ``inline_value_threshold``, ``max_key_size``,
    ``max_value_size``, ``vlog_segment_bytes``, ``target_table_bytes``,
    ``background_threads``, ``mmap_reads``, ``auto_compaction``, ``idle_settle_ms``.

    The database's folder is made if missing, but not its parents: a mistyped path raises
    :class:`FileNotFoundError` rather than building a tree of folders somewhere (as
    ``sqlite3.connect`` does)."""
    path = os.fspath(path)
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise FileNotFoundError(
            errno.ENOENT,
            f"cannot create the database: its parent folder {parent} does not exist "
            f"(make it first, e.g. os.makedirs)",
            path)
    return Db(_cerberus.EmbeddedDb.open(builtins.str(path), **options))


from ._device import Device, connect  # noqa: E402 (built on Namespace and _settings)
from .cluster import (  # noqa: E402 (tenants across devices: built on the classes above)
    Cluster,
    ClusterDeviceError,
    ClusterNamespace,
    NamespaceReadOnly, TenantMoving,
    connect_cluster,
)
