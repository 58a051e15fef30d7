"""The device client: :func:`connect` and the :class:`Device` it gives, a connection to a
device and its administration (namespaces, their settings, read-only), re-exported by
:mod:`cerberus`."""

from __future__ import annotations

import builtins
import json
import os
from typing import Any, Dict, List, Literal, Optional, Union

from . import _cerberus
from . import Namespace, _settings
from ._cerberus import AccessDenied, InvalidNamespace, NamespaceExists, ShuttingDown


class Device:
    """A connection to a Cerberus device (:func:`connect`)."""

    def __init__(self, native: Any, admin: bool = False) -> None:
        self._native = native
        # Connected with the admin secret (it may list namespaces).
        self._admin = admin

    def __enter__(self) -> "Device":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close()

    def close(self) -> None:
        """Drops this handle's connection (namespaces opened on it keep it until they go)."""
        self._native = None

    def _client(self) -> Any:
        if self._native is None:
            raise ShuttingDown("this device handle is closed")
        return self._native

    def create_namespace(self, name: str, exist_ok: bool = False, secret_file: Optional[str] = None,
                         capacity: Optional[int] = None, weight: Optional[int] = None,
                         reservation_ops: Optional[int] = None,
                         reservation_bytes: Optional[int] = None, limit_ops: Optional[int] = None,
                         limit_bytes: Optional[int] = None) -> Namespace:
        """Creates a namespace (needs the admin secret) and opens it; its credential is
        the returned namespace's ``secret``, shown this once by the device. With
        ``secret_file`` the credential is also written there (mode 0600).

        A name already taken raises :class:`NamespaceExists`, unless ``exist_ok``: then that
        namespace is opened with the credential in ``secret_file`` (the device keeps only
        a hash of it, so without that file it cannot be opened here).

        ``capacity`` and the shares are as :meth:`Db.create_namespace` takes them."""
        client = self._client()
        settings = _settings(capacity, weight, reservation_ops, reservation_bytes, limit_ops,
                             limit_bytes)
        try:
            nsid, secret = client.create_namespace(name, **settings)
        except NamespaceExists as e:
            if not exist_ok:
                raise
            if secret_file is None:
                raise NamespaceExists(
                    f"{e}; its credential was shown once, when it was created: open it with "
                    f"namespace({name!r}, secret), keep the credential with secret_file=, or "
                    f"issue a new one with rekey_namespace({name!r})"
                ) from None
            try:
                with builtins.open(secret_file) as f:
                    secret = f.read().strip()
            except FileNotFoundError:
                raise NamespaceExists(
                    f"{e}, and its credential is not in {secret_file!r} (it was created "
                    f"elsewhere, or the file was lost): rekey_namespace({name!r}, "
                    f"secret_file={secret_file!r}) issues a new one, or pick another name"
                ) from None
            return self.namespace(name, secret)
        if secret_file is not None:
            _write_secret(secret_file, secret)
        return Namespace(client.namespace(nsid, secret), name, secret)

    def namespace(self, ns: Union[int, str], secret: str) -> Namespace:
        """Opens the namespace with this id or name with its credential (:class:`AccessDenied`
        if wrong). By name, the device answers an unknown name as a wrong credential, so a
        stranger learns nothing; a handle with the admin secret, which may list the
        namespaces, raises :class:`InvalidNamespace` for a name no namespace has."""
        if isinstance(ns, str):
            try:
                native = self._client().namespace_named(ns, secret)
            except AccessDenied:
                if self._admin and all(n != ns for _, n in self._client().list_namespaces()):
                    raise InvalidNamespace(f"no namespace {ns!r}") from None
                raise
            return Namespace(native, ns, secret)
        return Namespace(self._client().namespace(ns, secret), None, secret)

    def rekey_namespace(self, ns: Union[int, str, Namespace],
                        secret_file: Optional[str] = None) -> Namespace:
        """Issues the namespace a new credential (needs the admin secret) and opens it with
        that credential: the old one is refused from now on, on every connection. With
        ``secret_file`` the new credential is written there (mode 0600), replacing the old."""
        client = self._client()
        nsid, name = self._resolve(ns)
        secret = client.rekey_namespace(nsid)
        if secret_file is not None:
            _write_secret(secret_file, secret)
        return Namespace(client.namespace(nsid, secret), name, secret)

    def _resolve(self, ns: Union[int, str, Namespace]) -> "tuple[int, Optional[str]]":
        """The id and name of a namespace given by id, name (looked up, admin) or handle."""
        if isinstance(ns, Namespace):
            return ns.nsid, None
        if isinstance(ns, str):
            found = [i for i, n in self._client().list_namespaces() if n == ns]
            if not found:
                raise InvalidNamespace(f"no namespace {ns!r}")
            return found[0], ns
        return ns, None

    def destroy_namespace(self, ns: Union[int, Namespace]) -> None:
        nsid = ns.nsid if isinstance(ns, Namespace) else ns
        self._client().destroy_namespace(nsid)

    def configure_namespace(self, ns: Union[int, Namespace], capacity: Optional[int] = None,
                            weight: Optional[int] = None, reservation_ops: Optional[int] = None,
                            reservation_bytes: Optional[int] = None,
                            limit_ops: Optional[int] = None,
                            limit_bytes: Optional[int] = None) -> None:
        """Changes the settings given of a namespace (needs the admin secret); the others
        stay. ``capacity=0`` removes the capacity."""
        nsid = ns.nsid if isinstance(ns, Namespace) else ns
        self._client().configure_namespace(
            nsid, **_settings(capacity, weight, reservation_ops, reservation_bytes, limit_ops,
                              limit_bytes))

    def set_read_only(self, ns: Union[int, Namespace], read_only: bool) -> None:
        """Makes a namespace read-only (``True``: every write raises
        :class:`NamespaceReadOnly`, reads are served) or writable again (``False``); needs
        the admin secret, and its other settings stay. Kept across restarts; setting it
        again is no error."""
        nsid = ns.nsid if isinstance(ns, Namespace) else ns
        self._client().set_read_only(nsid, bool(read_only))

    def list_namespaces(self) -> List[Dict[str, Any]]:
        return [{"nsid": i, "name": n} for i, n in self._client().list_namespaces()]

    def stats(self) -> Dict[str, Any]:
        """The device's counters (needs the admin secret)."""
        return json.loads(self._client().stats_json())

    def backup(self, path: str) -> Dict[str, Any]:
        """Writes a consistent backup of the device (its data, namespaces, indexes and
        credentials) to ``path`` on the device's machine (needs the admin secret): absolute,
        or relative to the parent of the device's data directory; it must not exist
        (:class:`InvalidField`), and one backup runs at a time (:class:`InternalError`,
        "busy"). Writes go on meanwhile. Restore: ``cerberus serve --data-dir PATH``.
        Returns ``dir``, ``sequence``, ``files_linked``, ``bytes_linked``, ``files_copied``,
        ``bytes_copied`` and ``namespaces`` (a count)."""
        return json.loads(self._client().backup_json(path))


def _write_secret(path: str, secret: str) -> None:
    """Writes a credential readable by its owner only: a file made so, or an old one made
    so before the secret goes in."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    with builtins.open(fd, "w") as f:
        f.write(secret + "\n")


def connect(address: str, admin_secret: Optional[str] = None, tls_ca: Optional[str] = None,
            server_name: Optional[str] = None, wire: Literal["native", "nvme"] = "native",
            hostnqn: Optional[str] = None, subnqn: Optional[str] = None,
            dhchap_secret: Optional[str] = None,
            dhchap_ctrl_secret: Optional[str] = None) -> Device:
    """Connects to a device at ``address`` (``host:port``); with ``admin_secret``, as its
    administrator; with ``tls_ca`` (a PEM file), over TLS, checking the certificate against
    ``server_name`` (default: the address's host).

    ``wire="nvme"`` speaks NVMe/TCP (``docs/nvme-tcp.md``): ``address`` is the device's
    ``--nvme-listen``, ``hostnqn`` this host's NQN as ``[nvme.hosts]`` names it (required),
    ``subnqn`` the subsystem (default ``nqn.2026-11.dev.cerberus:kv``), ``dhchap_secret`` the
    host's DH-HMAC-CHAP secret (wrong or missing when asked: :class:`AccessDenied`), and
    ``dhchap_ctrl_secret`` the device's ``[nvme.ctrl_secrets]`` entry, which the device must
    prove it holds. The admin secret counts over NVMe/TCP only from a host in ``admin_hosts``.
    An unknown ``wire``, ``wire="nvme"`` without ``hostnqn`` or with ``tls_ca``, and
    ``dhchap_secret`` on the native wire raise ``ValueError``."""
    return Device(_cerberus.DeviceClient.connect(
        address, admin_secret, tls_ca, server_name, wire, hostnqn, subnqn, dhchap_secret,
        dhchap_ctrl_secret), admin=admin_secret is not None)
