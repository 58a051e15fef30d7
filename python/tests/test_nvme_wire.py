"""`cerberus.connect(..., wire="nvme")`: the package over the device's NVMe/TCP target. One
device for the module, with its native port and its target on free ports: HOST granted every
namespace and listed as an admin host (as crates/cli/tests/cli/nvme_wire.rs serves it), AUTH_HOST
the same with a DH-HMAC-CHAP secret. Every call is made over both wires and the answers
compared."""

import re
import subprocess
import time

import pytest

import cerberus
from conftest import ADMIN_SECRET, _binary, fresh_name, stop

HOST = "nqn.2014-08.org.example:python"
AUTH_HOST = "nqn.2014-08.org.example:python-auth"
STRANGER = "nqn.2014-08.org.example:stranger"
# AUTH_HOST's secret (a 32-byte key of 7s, SHA-256 transformed) and another key's: those of
# crates/cli/tests/cli/nvme_wire.rs.
SECRET = "DHHC-1:01:BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwfLJNij:"
WRONG = "DHHC-1:01:CAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgnCjZ2:"


@pytest.fixture(scope="module")
def addresses(tmp_path_factory):
    """The device's native and NVMe/TCP addresses (both ports chosen by the device: the
    addresses are read from what `serve` prints)."""
    data = tmp_path_factory.mktemp("nvme-device")
    config = data / "device.toml"
    config.write_text(
        'nvme_listen = "127.0.0.1:0"\n'
        "[nvme]\n"
        # HOST has no secret: taken at its word (AUTH_HOST authenticates).
        "require_host_auth = false\n"
        f'admin_hosts = ["{HOST}", "{AUTH_HOST}"]\n'
        "[nvme.hosts]\n"
        f'"{HOST}" = ["*"]\n'
        f'"{AUTH_HOST}" = ["*"]\n'
        "[nvme.host_secrets]\n"
        f'"{AUTH_HOST}" = "{SECRET}"\n'
        "[nvme.ctrl_secrets]\n"
        f'"{AUTH_HOST}" = "{WRONG}"\n'
    )
    out = data / "stdout.log"
    with open(out, "wb") as stdout, open(data / "stderr.log", "wb") as stderr:
        proc = subprocess.Popen(
            [_binary(), "serve", "--data-dir", str(data / "data"), "--listen", "127.0.0.1:0",
             "--admin-secret", ADMIN_SECRET, "--config", str(config)],
            stdout=stdout, stderr=stderr,
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            text = out.read_text()
            native = re.search(r"^listening on (\S+)$", text, re.M)
            nvme = re.search(r"^NVMe/TCP on (\S+)$", text, re.M)
            if native and nvme:
                break
            if proc.poll() is not None:
                raise RuntimeError(f"device exited: {(data / 'stderr.log').read_text()}")
            if time.monotonic() > deadline:
                raise RuntimeError("device did not print its addresses in 30 s")
            time.sleep(0.05)
        yield native.group(1), nvme.group(1)
    finally:
        stop(proc)


def nvme(addresses, **kw):
    kw.setdefault("hostnqn", HOST)
    return cerberus.connect(addresses[1], wire="nvme", **kw)


def native(addresses, **kw):
    return cerberus.connect(addresses[0], **kw)


def exercise(ns):
    """The namespace calls of the package, on an empty namespace: every answer, in order
    (an exception as its class name)."""
    out = []

    def call(f, *args, **kw):
        try:
            out.append(f(*args, **kw))
        except cerberus.CerberusError as e:
            out.append(type(e).__name__)

    short, long = b"k1", b"a-key-longer-than-the-kv-command-sets-16-bytes"
    big = bytes(range(256)) * 80  # 20,480 bytes: past the target's in-capsule data
    call(ns.put, short, b"v1")
    call(ns.put, long, b"v2")
    call(ns.put, b"big", big)
    call(ns.put, "text", "stored as UTF-8")
    for k in (short, long, b"big", "text", b"absent", b"an-absent-key-longer-than-sixteen"):
        call(ns.get, k)
    call(lambda: ns[b"absent"])
    call(ns.contains, short)
    call(ns.contains, b"absent")
    call(lambda: long in ns)
    call(ns.get_many, [short, b"absent", long, b"big", b"an-absent-key-longer-than-sixteen"])
    call(ns.delete, short)
    call(ns.delete, short)
    call(ns.delete, b"an-absent-key-longer-than-sixteen")
    call(ns.get, short)
    cities = ["Oslo", "Lima", "Kyiv"]
    with ns.batch() as b:
        for i in range(60):
            b.put(b"r%03d" % i, b'{"city": "%s", "stars": %d, "user": {"id": "u%02d"}}'
                  % (cities[i % 3].encode(), i % 5 + 1, i % 7))
        b.delete(long)
    call(ns.write_batch, puts=[(b"w1", b"1"), (b"w2", b"2")], deletes=[b"w1", b"big"])
    call(ns.get_many, [long, b"big", b"w1", b"w2", b"r000", b"r059"])
    call(lambda: list(ns.scan()))
    call(lambda: list(ns.scan(prefix=b"r01")))
    call(lambda: list(ns.scan(start=b"r050", end=b"r055")))
    call(lambda: list(ns.scan(prefix=b"r", keys_only=True)))
    call(lambda: list(ns.keys(start=b"r057")))
    call(ns.create_index, "city")
    call(ns.create_index, "city")
    call(ns.create_index, "city", exist_ok=True)
    call(ns.create_index, "user.id", kind="classic")
    call(ns.list_indexes)
    call(lambda: list(ns.find({"city": "Oslo", "stars": {"$gte": 3}})))
    found = ns.find({"city": "Lima"}, project=["stars", "user.id"], page_bytes=256)
    call(found.to_list)
    out.append(found.pages)
    call(lambda: list(ns.find({"user.id": "u03"}, keys_only=True)))
    call(lambda: list(ns.find({"stars": {"$lt": 3}}, limit=7)))
    call(ns.get_by_secondary, "city", "Kyiv")
    call(ns.top, "stars", 4, filter={"city": "Oslo"}, desc=True, project=["user.id"])
    call(ns.aggregate, "avg", "stars", {"city": "Oslo"})
    call(ns.aggregate, "count", filter={"stars": 5})
    call(lambda: list(ns.find({"city": {"$nope": 1}})))
    call(ns.drop_index, "user.id")
    call(ns.drop_index, "user.id")
    call(ns.list_indexes)
    return out


def test_the_same_answers_over_nvme_as_over_the_native_wire(addresses):
    with nvme(addresses, admin_secret=ADMIN_SECRET) as nv, \
            native(addresses, admin_secret=ADMIN_SECRET) as na:
        # A namespace made over NVMe/TCP as admin, another over the native wire.
        a = nv.create_namespace(fresh_name("nvme"))
        b = na.create_namespace(fresh_name("native"))
        over_nvme, over_native = exercise(a), exercise(b)
        assert over_nvme == over_native
        # The answers are what the calls should give, not only alike (a few checked).
        assert over_nvme[4:8] == [b"v1", b"v2", bytes(range(256)) * 80, b"stored as UTF-8"]
        assert "KeyNotFound" in over_nvme and "IndexExists" in over_nvme
        # What one wire stored, the other reads: each namespace opened over the other wire.
        a_native = na.namespace(a.nsid, a.secret)
        b_nvme = nv.namespace(b.nsid, b.secret)
        assert list(a_native.scan()) == list(a.scan()) == list(b.scan()) == list(b_nvme.scan())
        a.put(b"late", b"over nvme")
        assert a_native.get(b"late") == b"over nvme"
        # The admin calls answer alike.
        assert nv.list_namespaces() == na.list_namespaces()
        assert {"nsid": a.nsid, "name": a.name} in nv.list_namespaces()
        assert "puts" in nv.stats()
        # A wrong namespace credential is refused on this wire as on the other.
        with pytest.raises(cerberus.AccessDenied):
            nv.namespace(a.nsid, "not-the-secret-at-all-0000")


def test_find_as_arrow_over_nvme(addresses):
    pyarrow = pytest.importorskip("pyarrow")
    with nvme(addresses, admin_secret=ADMIN_SECRET) as nv, \
            native(addresses, admin_secret=ADMIN_SECRET) as na:
        ns = nv.create_namespace(fresh_name("arrow"))
        with ns.batch() as b:
            for i in range(200):
                b.put("p%03d" % i, '{"city": "%s", "stars": %d}' % (["Oslo", "Lima"][i % 2], i % 5))
        ns.create_index("city")
        same = na.namespace(ns.nsid, ns.secret)
        over_nvme = ns.find({"city": "Oslo"}, page_bytes=512)
        over_native = same.find({"city": "Oslo"}, page_bytes=512)
        t1, t2 = over_nvme.to_arrow(), over_native.to_arrow()
        assert isinstance(t1, pyarrow.Table)
        assert t1.equals(t2) and t1.num_rows == 100
        assert t1.column_names == ["_pk", "city", "stars"]
        assert over_nvme.pages == over_native.pages > 1


def test_a_host_with_a_secret_authenticates_with_dhchap_secret(addresses):
    with nvme(addresses, hostnqn=AUTH_HOST, dhchap_secret=SECRET,
              admin_secret=ADMIN_SECRET) as d:
        ns = d.create_namespace(fresh_name("chap"))
        ns.put(b"k", b"v")
        assert d.namespace(ns.nsid, ns.secret).get(b"k") == b"v"
    # The wrong key, or none where the device holds one, is refused at the connect.
    for secret in (WRONG, None):
        with pytest.raises(cerberus.AccessDenied, match="authentication failed"):
            nvme(addresses, hostnqn=AUTH_HOST, dhchap_secret=secret)


def test_the_device_proves_itself_with_dhchap_ctrl_secret(addresses):
    # WRONG is the controller secret the device holds for AUTH_HOST.
    with nvme(addresses, hostnqn=AUTH_HOST, dhchap_secret=SECRET, dhchap_ctrl_secret=WRONG,
              admin_secret=ADMIN_SECRET) as d:
        ns = d.create_namespace(fresh_name("both"))
        ns.put(b"k", b"v")
    # A host expecting another controller secret stops before any call.
    with pytest.raises(cerberus.AccessDenied, match="did not prove"):
        nvme(addresses, hostnqn=AUTH_HOST, dhchap_secret=SECRET, dhchap_ctrl_secret=SECRET)
    with pytest.raises(ValueError, match="needs dhchap_secret"):
        cerberus.connect("127.0.0.1:9", wire="nvme", hostnqn=AUTH_HOST,
                         dhchap_ctrl_secret=WRONG)


def test_grants_and_the_subsystem_nqn(addresses):
    with native(addresses, admin_secret=ADMIN_SECRET) as na:
        ns = na.create_namespace(fresh_name("grant"))
    # The default subnqn is the device's default: given or not, the same subsystem.
    same = nvme(addresses, subnqn="nqn.2026-11.dev.cerberus:kv").namespace(ns.nsid, ns.secret)
    same.put(b"k", b"v")
    assert nvme(addresses).namespace(ns.nsid, ns.secret).get(b"k") == b"v"
    # A host NQN the device grants nothing is refused, with the credential right.
    with pytest.raises(cerberus.AccessDenied):
        nvme(addresses, hostnqn=STRANGER).namespace(ns.nsid, ns.secret)
    # The admin secret counts only from an admin host.
    with pytest.raises(cerberus.AccessDenied):
        nvme(addresses, hostnqn=STRANGER, admin_secret=ADMIN_SECRET)
    # Another subsystem's NQN: the device's Connect refuses it ("Connect Invalid
    # Parameters", which the Rust client reports as a protocol error naming the NQNs).
    with pytest.raises(cerberus.CerberusError, match="connecting to nqn.2026-11.dev.cerberus:other"):
        nvme(addresses, subnqn="nqn.2026-11.dev.cerberus:other")


def test_connect_refuses_what_the_cli_refuses():
    # Said before any connection (nothing listens at this address).
    nowhere = "127.0.0.1:9"
    with pytest.raises(ValueError, match="wire"):
        cerberus.connect(nowhere, wire="scsi")
    with pytest.raises(ValueError, match="hostnqn"):
        cerberus.connect(nowhere, wire="nvme")
    with pytest.raises(ValueError, match="dhchap_secret"):
        cerberus.connect(nowhere, dhchap_secret=SECRET)
    with pytest.raises(ValueError, match="tls_ca"):
        cerberus.connect(nowhere, wire="nvme", hostnqn=HOST, tls_ca="ca.pem")
