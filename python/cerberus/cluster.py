"""Tenants across several devices: :func:`connect_cluster` reads a cluster description and
gives a :class:`Cluster` whose :meth:`Cluster.namespace` answers the calls of one
:class:`cerberus.Namespace`, spread over the devices the tenant spans.

Placement is in the client, as Redis Cluster and Cassandra drivers do it: each key belongs
to one device of the tenant's placement, chosen by rendezvous hashing of the key and the
device names (``cluster_owner``, the same Rust function the CLI uses), so there is no table
to keep. Point calls go to the owning device; scans, queries and aggregates fan out to every
part and are merged here; :meth:`ClusterNamespace.find` returns a ``dask.dataframe`` with
one partition per device.

What a user must know: a batch is atomic per device, not across devices; a scan or query
reads each device at its own moment (no snapshot across devices); there is no replication,
so a device down makes the calls that need it fail with :class:`ClusterDeviceError`.
"""

from __future__ import annotations

import builtins
import contextlib
import concurrent.futures
import heapq
import json
import os
import threading
import uuid
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

from . import _cerberus
from . import Batch, Bytesish, CerberusError, ConnectionError, Device, FindResult, Namespace
from . import AccessDenied, InvalidNamespace, _top_rows, connect
# Raised by a device for a write to a part a move has made read-only (its fence).
from ._cerberus import NamespaceReadOnly
from ._cluster_merge import (_LEAST_NUMBER, _add_stats, _and, _conform, _find_plan, _number,
                             _pk_bytes, _scalar_rank)

__all__ = ["connect_cluster", "Cluster", "ClusterNamespace", "ClusterDeviceError",
           "TenantMoving", "NamespaceReadOnly"]



class ClusterDeviceError(ConnectionError):
    """A device of the cluster could not be reached or dropped the connection. ``device``
    and ``address`` name it; calls that only need other devices keep working."""

    def __init__(self, device: str, address: str, cause: BaseException) -> None:
        super().__init__(f"cluster device {device!r} at {address} is unreachable: {cause}")
        self.device = device
        self.address = address


class TenantMoving(CerberusError):
    """A write to a tenant being moved to other devices: reads go on against its old
    placement, writes resume once the move has switched the description."""


def _resolve(base: str, path: Optional[str]) -> Optional[str]:
    return None if path is None else os.path.join(base, os.path.expanduser(path))


def _read_secret(path: str, what: str) -> str:
    try:
        with builtins.open(path) as f:
            return f.read().strip()
    except OSError as e:
        # The same class (FileNotFoundError, PermissionError, ...), saying whose file it is.
        raise type(e)(e.errno, f"cannot read {what}: {e.strerror}", path) from e


def connect_cluster(desc: Union[str, os.PathLike, Dict[str, Any]],
                    base_dir: Optional[str] = None) -> "Cluster":
    """A :class:`Cluster` from a description: the path of a TOML file (as the ``cerberus
    cluster`` commands write it; relative paths in it are taken from its folder) or a dict of
    the same shape (relative paths from ``base_dir``, default the current directory), both
    read and checked by the Rust loader (``ValueError`` naming what is wrong)::

        {"devices": {name: {"address", "tls_ca"?, "server_name"?, "admin_secret_env"?,
                            "admin_secret_file"?}},
         "tenants": {name: {"devices": [names], "generation": int,
                            "parts": {device: {"namespace", "nsid"?, "secret_file"}},
                            "moving_to"?: [names], "moving_parts"?: {...}}}}

    A part's ``nsid`` (recorded by ``cerberus cluster``) lets it be opened with its own
    credential alone; a part without one is looked up by name with the device's admin
    secret (descriptions written before ids were recorded).

    Nothing is connected yet: each device is on first use. A description read from a file
    is watched: each write checks the file before it is sent (a move that ended is
    followed, one under way refused) and after it is answered, when a move of the tenant
    recorded meanwhile makes it raise :class:`TenantMoving` (the write may not be kept:
    retry it once the move ends). A dict cannot be watched: stop its
    writers before a move."""
    if isinstance(desc, dict):
        # Checked by the same Rust rules as a file (names, parts matching devices, ...).
        loaded = json.loads(_cerberus.check_cluster(json.dumps(desc, default=os.fspath)))
        base = base_dir if base_dir is not None else os.getcwd()
        return Cluster(loaded, base)
    path = os.fspath(desc)
    stamp = _stamp(path)
    loaded = json.loads(_cerberus.load_cluster(path))
    base = base_dir if base_dir is not None else os.path.dirname(os.path.abspath(path))
    return Cluster(loaded, base, path, stamp)


def _stamp(path: str) -> Tuple[int, ...]:
    """What changes when the description file is saved (a save renames a new file over
    it: another inode, times and usually size)."""
    st = os.stat(path)
    return (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)


class Cluster:
    """Devices and the tenants placed on them (:func:`connect_cluster`). Connections are
    made on first use and dropped when a device fails, so a device back up is reached
    again by the next call."""

    def __init__(self, desc: Dict[str, Any], base_dir: str, path: Optional[str] = None,
                 stamp: Optional[Tuple[int, ...]] = None) -> None:
        self._desc = desc
        self._base = base_dir
        self._path = path
        self._stamp = stamp
        # Connections by (device, as admin): admin ones only for parts with no recorded id.
        self._devices: Dict[Tuple[str, bool], Device] = {}
        self._lock = threading.Lock()
        self._threads: Optional[concurrent.futures.ThreadPoolExecutor] = None

    def __enter__(self) -> "Cluster":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close()

    def close(self) -> None:
        """Drops every connection (namespaces opened keep theirs until they go)."""
        with self._lock:
            for d in self._devices.values():
                d.close()
            self._devices.clear()
            threads, self._threads = self._threads, None
        if threads is not None:
            threads.shutdown(wait=False)

    def _pool(self) -> concurrent.futures.ThreadPoolExecutor:
        """Threads for calls to several devices at once, one per device."""
        with self._lock:
            if self._threads is None:
                self._threads = concurrent.futures.ThreadPoolExecutor(
                    max_workers=max(1, len(self._desc["devices"])),
                    thread_name_prefix="cerberus-cluster")
            return self._threads

    @property
    def description(self) -> Dict[str, Any]:
        return self._desc

    def _reload(self) -> bool:
        """Reads the description file again if it changed since it was read (one ``stat``
        when it did not); whether it changed. A dict description never does."""
        if self._path is None:
            return False
        try:
            stamp = _stamp(self._path)
            if stamp == self._stamp:
                return False
            desc = json.loads(_cerberus.load_cluster(self._path))
        except (OSError, ValueError):
            # Mid-save or unreadable now: keep the placement read last.
            return False
        with self._lock:
            self._desc, self._stamp = desc, stamp
        return True

    def tenants(self) -> List[str]:
        return sorted(self._desc["tenants"])

    def address(self, device: str) -> str:
        return self._desc["devices"][device]["address"]

    @contextlib.contextmanager
    def _guard(self, device: str) -> Iterator[None]:
        """Turns a failed connection into a :class:`ClusterDeviceError` naming the device,
        and forgets the connection so the next call dials again."""
        try:
            yield
        except ClusterDeviceError:
            raise
        except ConnectionError as e:
            with self._lock:
                self._devices.pop((device, False), None)
                self._devices.pop((device, True), None)
            raise ClusterDeviceError(device, self.address(device), e) from e

    def device(self, name: str, admin: bool = False) -> Device:
        """The connection to device ``name`` (made now if there is none): with no credential
        (each part proves its own), or with ``admin`` as the device's administrator (only
        for parts the description records no ``nsid`` for, looked up by name)."""
        with self._lock:
            dev = self._devices.get((name, admin))
        if dev is not None:
            return dev
        conf = self._desc["devices"][name]
        secret = self._admin_secret(name, conf) if admin else None
        with self._guard(name):
            dev = connect(conf["address"], admin_secret=secret,
                          tls_ca=_resolve(self._base, conf.get("tls_ca")),
                          server_name=conf.get("server_name"))
        with self._lock:
            return self._devices.setdefault((name, admin), dev)

    def _admin_secret(self, name: str, conf: Dict[str, Any]) -> str:
        """As the Rust side reads it: the environment variable first, then the file."""
        var = conf.get("admin_secret_env")
        if var:
            admin = (os.environ.get(var) or "").strip()
            if admin:
                return admin
            if not conf.get("admin_secret_file"):
                raise ValueError(f"device {name!r}: environment variable {var} (its admin "
                                 f"secret) is not set")
        if not conf.get("admin_secret_file"):
            raise ValueError(f"device {name!r}: no admin secret in the description")
        return _read_secret(_resolve(self._base, conf["admin_secret_file"]),
                            f"device {name!r}'s admin secret")

    def namespace(self, name: str) -> "ClusterNamespace":
        """The tenant ``name``, with the calls of a :class:`cerberus.Namespace`."""
        if name not in self._desc["tenants"]:
            raise InvalidNamespace(f"no tenant {name!r} in the cluster description "
                                   f"(tenants: {', '.join(self.tenants()) or 'none'})")
        return ClusterNamespace(self, name, self._desc["tenants"][name])


class ClusterNamespace:
    """One tenant spread over devices: the calls and answers of :class:`cerberus.Namespace`.
    Each key lives on ``cluster_owner(key, devices)``; calls over many keys are grouped per
    device and answered in the caller's order. While the tenant is being moved
    (``moving_to`` in the description) reads use the old placement and writes raise
    :class:`TenantMoving`."""

    def __init__(self, cluster: Cluster, name: str, tenant: Dict[str, Any]) -> None:
        self._cluster = cluster
        self._name = name
        self._tenant = tenant
        self._devices: List[str] = list(tenant["devices"])
        self._parts: Dict[str, Namespace] = {}
        self._lock = threading.Lock()

    def _placement_changed(self) -> bool:
        """Whether the description file now records another placement of this tenant (a
        move begun, ended or abandoned); the new one is taken for later calls."""
        # Another namespace of this cluster may have read the new file already: compare
        # with what the cluster holds, whoever read it.
        self._cluster._reload()
        tenant = self._cluster._desc["tenants"].get(self._name)
        if tenant is self._tenant:
            return False
        if tenant is None:
            raise InvalidNamespace(f"tenant {self._name!r} is no longer in the cluster "
                                   f"description")
        if tenant == self._tenant:
            self._tenant = tenant
            return False
        with self._lock:
            if tenant["parts"] != self._tenant["parts"]:
                self._parts.clear()
            self._tenant, self._devices = tenant, list(tenant["devices"])
        return True

    def _after_write(self) -> None:
        """A write answered while a move of the tenant was recorded may be left behind in
        the old placement: refused here, to be retried, rather than silently lost."""
        if self._placement_changed():
            raise TenantMoving(
                f"tenant {self._name!r}: its placement changed while this write was under way "
                f"(a move began or ended): it may not be kept; retry it once the move ends")

    @property
    def name(self) -> str:
        return self._name

    @property
    def devices(self) -> List[str]:
        """The devices the tenant's keys are placed on (the old ones during a move)."""
        return list(self._devices)

    def __repr__(self) -> str:
        return f"ClusterNamespace(name={self._name!r}, devices={self._devices!r})"

    def owner(self, key: Bytesish) -> str:
        """The device that holds ``key``."""
        k = key.encode("utf-8") if isinstance(key, str) else bytes(key)
        return self._devices[_cerberus.cluster_owner(k, self._devices)]

    def _part(self, device: str) -> Namespace:
        with self._lock:
            ns = self._parts.get(device)
        if ns is not None:
            return ns
        part = self._tenant["parts"][device]
        secret = _read_secret(_resolve(self._cluster._base, part["secret_file"]),
                              f"tenant {self._name!r}'s credential on device {device!r}")
        nsid = part.get("nsid")
        try:
            with self._cluster._guard(device):
                if nsid is not None:
                    # The id the admin command recorded: the tenant's credential alone.
                    ns = self._cluster.device(device).namespace(int(nsid), secret)
                else:
                    ns = self._cluster.device(device, admin=True).namespace(
                        part["namespace"], secret)
        except (AccessDenied, ValueError, OSError) as e:
            if nsid is not None or isinstance(e, ConnectionError):
                raise
            raise type(e)(
                f"tenant {self._name!r} on device {device!r}: {e} (the description records no "
                f"id for namespace {part['namespace']!r}: it is looked up by name with the "
                f"device's admin secret; `cerberus cluster record-ids`, run once by the admin, "
                f"records the ids so clients need no admin secret)") from e
        with self._lock:
            return self._parts.setdefault(device, ns)

    def _call(self, device: str, fn: str, *args: Any) -> Any:
        """``fn`` of the tenant's part on ``device``; a failed connection is forgotten (a
        later call reconnects) and raised as :class:`ClusterDeviceError`. A part refusing a
        write as read-only is fenced by a move: :class:`TenantMoving`, to retry after it."""
        part = self._part(device)
        try:
            with self._cluster._guard(device):
                return getattr(part, fn)(*args)
        except ClusterDeviceError:
            self._forget(device)
            raise
        except NamespaceReadOnly as e:
            raise TenantMoving(
                f"tenant {self._name!r}: its part on device {device!r} is read-only (a move "
                f"has fenced it): nothing written; retry once the move ends") from e

    def _forget(self, device: str) -> None:
        with self._lock:
            self._parts.pop(device, None)

    def _fan(self, calls: List[Tuple[str, str, Tuple[Any, ...]]]) -> List[Any]:
        """``(device, fn, args)`` calls run at once, one thread each (the native calls
        release the GIL, so round trips to several devices overlap); answers in order, the
        first failure in order raised once all are done."""
        if len(calls) <= 1:
            return [self._call(d, fn, *args) for d, fn, args in calls]
        futures = [self._cluster._pool().submit(self._call, d, fn, *args)
                   for d, fn, args in calls]
        concurrent.futures.wait(futures)
        return [f.result() for f in futures]

    def _each(self, fn: str, *args: Any) -> List[Any]:
        """``fn`` on every part at once, answers in placement order."""
        return self._fan([(d, fn, args) for d in self._devices])

    def _writable(self) -> None:
        # The placement as the file says now (one stat when unchanged): a move that ended
        # since is followed, one that began is refused before anything is sent.
        self._placement_changed()
        moving = self._tenant.get("moving_to")
        if moving:
            raise TenantMoving(
                f"tenant {self._name!r} is being moved to {', '.join(moving)}: reads go on, "
                f"writes resume after the move (when the description no longer says "
                f"moving_to)")

    def put(self, key: Bytesish, value: Bytesish) -> None:
        self._writable()
        self._call(self.owner(key), "put", key, value)
        self._after_write()

    def get(self, key: Bytesish) -> Optional[bytes]:
        return self._call(self.owner(key), "get", key)

    def __getitem__(self, key: Bytesish) -> bytes:
        return self._call(self.owner(key), "__getitem__", key)

    def __setitem__(self, key: Bytesish, value: Bytesish) -> None:
        self.put(key, value)

    def __contains__(self, key: Bytesish) -> bool:
        return self.contains(key)

    def delete(self, key: Bytesish) -> bool:
        self._writable()
        found = self._call(self.owner(key), "delete", key)
        self._after_write()
        return found

    def contains(self, key: Bytesish) -> bool:
        return self._call(self.owner(key), "contains", key)

    def get_many(self, keys: List[Bytesish]) -> List[Optional[bytes]]:
        """Values of ``keys`` in order (``None`` where absent): one ``get_many`` per device."""
        keys = list(keys)
        out: List[Optional[bytes]] = [None] * len(keys)
        groups: Dict[str, List[int]] = {}
        for i, k in enumerate(keys):
            groups.setdefault(self.owner(k), []).append(i)
        calls = [(d, "get_many", ([keys[i] for i in idx],)) for d, idx in groups.items()]
        for idx, values in zip(groups.values(), self._fan(calls)):
            for i, v in zip(idx, values):
                out[i] = v
        return out

    def write_batch(self, puts: Optional[List[Tuple[Bytesish, Bytesish]]] = None,
                    deletes: Optional[List[Bytesish]] = None) -> None:
        """Writes ``puts`` then ``deletes``, split per device: all or none on each device,
        but **not atomic across devices** (sent to them at once: a device that fails leaves
        the others' writes done)."""
        self._writable()
        puts, deletes = list(puts or []), list(deletes or [])
        per: Dict[str, Tuple[List[Any], List[Any]]] = {}
        for k, v in puts:
            per.setdefault(self.owner(k), ([], []))[0].append((k, v))
        for k in deletes:
            per.setdefault(self.owner(k), ([], []))[1].append(k)
        self._fan([(d, "write_batch", per[d]) for d in self._devices if d in per])
        self._after_write()

    def batch(self) -> Batch:
        """A :class:`cerberus.Batch` for a ``with`` block, written by :meth:`write_batch`
        (atomic per device, not across devices)."""
        return Batch(self)  # type: ignore[arg-type] - Batch only calls write_batch

    def _scan_part(self, device: str, it: Iterator[Any]) -> Iterator[Tuple[bytes, bytes]]:
        try:
            with self._cluster._guard(device):
                yield from it
        except ClusterDeviceError:
            self._forget(device)
            raise

    def scan(self, start: Optional[Bytesish] = None, end: Optional[Bytesish] = None,
             prefix: Optional[Bytesish] = None,
             keys_only: bool = False) -> Iterator[Tuple[bytes, bytes]]:
        """``(key, value)`` pairs in key order: one scan per device (each at its own
        snapshot), merged."""
        scans = [self._scan_part(d, self._call(d, "scan", start, end, prefix, keys_only))
                 for d in self._devices]
        return heapq.merge(*scans, key=lambda kv: kv[0])

    def keys(self, start: Optional[Bytesish] = None, end: Optional[Bytesish] = None,
             prefix: Optional[Bytesish] = None) -> Iterator[bytes]:
        return (k for k, _ in self.scan(start, end, prefix, True))

    def create_index(self, attr: str, kind: str = "vas", exist_ok: bool = False) -> None:
        """Indexes ``attr`` on every part at once (:meth:`cerberus.Namespace.create_index`); a
        part that fails leaves it on the others: call again with ``exist_ok``."""
        self._writable()
        self._each("create_index", attr, kind, exist_ok)
        self._after_write()

    def drop_index(self, attr: str) -> None:
        self._writable()
        self._each("drop_index", attr)
        self._after_write()

    def list_indexes(self) -> List[Dict[str, Any]]:
        """The indexes, as the first device's part lists them (every part has the same)."""
        return self._call(self._devices[0], "list_indexes")

    def stats(self) -> Dict[str, Any]:
        """The parts' counters and bytes added up (per level and step too; no ``nsid``,
        the first part's ``shares``), and each part's own under ``parts`` (with
        ``device``)."""
        parts = self._each("stats")
        total = _add_stats(parts)
        total["parts"] = [dict(s, device=d) for d, s in zip(self._devices, parts)]
        return total

    def get_by_secondary(self, attr: str, value: Any,
                         limit: Optional[int] = None) -> List[Union[str, bytes]]:
        """Primary keys whose indexed ``attr`` equals ``value``, the parts' merged in key
        order."""
        per = self._each("get_by_secondary", attr, value, limit)
        merged = heapq.merge(*per, key=_pk_bytes)
        return list(merged)[:limit] if limit is not None else list(merged)

    def top(self, by: str, k: int, filter: Optional[Dict[str, Any]] = None, desc: bool = False,
            project: Optional[List[str]] = None) -> List[Dict[str, Any]]:
        """The ``k`` records ranked first by ``by``: each part's top ``k``, merged in the
        engine's order (values of a type together, ties by primary key) and cut to ``k``."""
        doc: Dict[str, Any] = {"op": "top", "filter": filter or {}, "by": by, "desc": desc,
                               "k": k}
        if project is not None:
            doc["project"] = list(project)
        ranked = []
        for records, summary in self._each("_query", doc):
            ranked.extend((_scalar_rank(key), pk, row)
                          for key, pk, row in _top_rows(records, summary, by))
        # Ties by pk ascending whichever way the ranking goes: sort by pk, then stably by key.
        ranked.sort(key=lambda r: r[1])
        ranked.sort(key=lambda r: r[0], reverse=desc)
        return [row for _, _, row in ranked[:k]]

    def aggregate(self, fn: str, attr: Optional[str] = None,
                  filter: Optional[Dict[str, Any]] = None) -> Any:
        """``count``, ``sum``, ``avg``, ``min`` or ``max`` from the parts' partials: counts
        and sums add up, ``min``/``max`` is the least/greatest partial in the engine's order,
        ``avg`` is the total sum over the count of numbers (what one device averages: the
        numbers at ``attr``; ``None`` over none). Sums of fractions may differ from one
        device's in the last bits (added in another order)."""
        def one(f: str, flt: Optional[Dict[str, Any]]) -> List[Any]:
            return self._each("aggregate", f, attr, flt)

        if fn == "count":
            return sum(one("count", filter))
        if fn == "sum":
            return _number(sum(float(v) for v in one("sum", filter)))
        if fn in ("min", "max"):
            vals = [v for v in one(fn, filter) if v is not None]
            pick = min if fn == "min" else max
            return pick(vals, key=_scalar_rank) if vals else None
        if fn == "avg" and attr is not None:
            n = sum(one("count", _and(filter, {attr: {"$gte": _LEAST_NUMBER}})))
            return None if n == 0 else _number(sum(map(float, one("sum", filter))) / n)
        # Anything else is refused by the device as on one device.
        return self._call(self._devices[0], "aggregate", fn, attr, filter)

    def find(self, filter: Optional[Dict[str, Any]] = None, project: Optional[List[str]] = None,
             limit: Optional[int] = None, page_bytes: Optional[int] = None,
             keys_only: bool = False, meta: Any = None) -> Any:
        """The records matching ``filter`` as a ``dask.dataframe.DataFrame``, one partition
        per device built from its Arrow pages (:meth:`cerberus.FindResult.to_arrow`).
        ``.compute()`` holds the rows and columns of one device's ``find(...).to_pandas()``
        in another row order (compare after sorting by ``_pk``), column types unified as one
        device infers them (integers with floats are floats, missing on a device is null).

        With ``limit`` each device returns at most ``limit`` and the first ``limit`` by
        primary key are kept: one device walking an index instead returns the first in
        index order, so the two agree where its plan scans (no index on the filter).

        Dask needs the columns and their types when the frame is built: ``meta`` (an empty
        DataFrame or ``{column: dtype}``) gives them without reading anything; by default
        they are ``_pk`` alone for ``keys_only``, else those of the first records (up to 64)
        of each device, read now. The whole answer is read at ``.compute()``, each device
        on a thread of Dask's default scheduler (the connections are this process's)."""
        try:
            import dask
            import dask.dataframe as dd
            import pyarrow
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError("find on a cluster needs Dask: pip install 'cerberus[cluster]' "
                              "(dask[dataframe], pyarrow, pandas)") from e
        doc: Dict[str, Any] = {"op": "find", "filter": filter or {}}
        given = {"project": None if project is None else list(project), "limit": limit,
                 "keys_only": keys_only or None, "page_bytes": page_bytes}
        doc.update((k, v) for k, v in given.items() if v is not None)
        if meta is None:
            meta = self._find_meta(pyarrow, doc, keys_only)
        # Each device's table, one step that sees every table's schema (and pks, for a limit),
        # then each partition conformed to it. Keys named: no hashing of native handles.
        run = f"cerberus-find-{uuid.uuid4().hex}"
        tables = [dask.delayed(self._part_arrow)(d, doc, dask_key_name=f"{run}-{d}")
                  for d in self._devices]
        plan = dask.delayed(_find_plan)(tables, limit, dask_key_name=f"{run}-plan")
        parts = [dask.delayed(_conform)(t, plan, dask_key_name=f"{run}-part-{d}")
                 for d, t in zip(self._devices, tables)]
        # Dask would turn object columns (objects, arrays) into strings: one device keeps them.
        with dask.config.set({"dataframe.convert-string": False}):
            return dd.from_delayed(parts, meta=meta, verify_meta=False)

    def _part_arrow(self, device: str, doc: Dict[str, Any]) -> Any:
        try:
            with self._cluster._guard(device):
                return FindResult(self._part(device), doc).to_arrow()
        except ClusterDeviceError:
            self._forget(device)
            raise

    def _find_meta(self, pyarrow: Any, doc: Dict[str, Any], keys_only: bool) -> Any:
        """The empty frame that names the columns and their types: ``_pk`` alone for
        keys_only, else those of the first records (up to 64) of each device, read now
        (types from a guess would break lazy arithmetic on the columns)."""
        if keys_only:
            return pyarrow.schema([("_pk", pyarrow.string())]).empty_table().to_pandas()
        sample = dict(doc, limit=min(64, doc.get("limit") or 64))
        schema, _ = _find_plan([self._part_arrow(d, sample) for d in self._devices], None)
        return schema.empty_table().to_pandas()
