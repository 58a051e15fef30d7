"""What only a device does: credentials, admin calls, connections."""

import pytest

import cerberus
from conftest import ADMIN_SECRET, fresh_name


def test_namespace_opened_with_its_secret(device, device_address):
    ns = device.create_namespace(fresh_name("cred"))
    assert ns.secret
    ns.put(b"k", b"v")
    other = cerberus.connect(device_address)
    same = other.namespace(ns.nsid, ns.secret)
    assert same.get(b"k") == b"v"


def test_wrong_secret_is_access_denied(device, device_address):
    ns = device.create_namespace(fresh_name("deny"))
    client = cerberus.connect(device_address)
    with pytest.raises(cerberus.AccessDenied):
        client.namespace(ns.nsid, "not-the-secret-at-all-0000")


def test_admin_calls_need_the_admin_secret(device_address):
    client = cerberus.connect(device_address)
    with pytest.raises(cerberus.AccessDenied):
        client.create_namespace(fresh_name("no-admin"))
    with pytest.raises(cerberus.AccessDenied):
        client.list_namespaces()


def test_wrong_admin_secret(device_address):
    with pytest.raises(cerberus.AccessDenied):
        cerberus.connect(device_address, admin_secret="wrong-admin-secret-0000000000")


def test_device_stats(device):
    before = device.stats()
    ns = device.create_namespace(fresh_name("dstats"))
    for i in range(3):
        ns.put(b"k%d" % i, b"v")
    after = device.stats()
    # The device's counters over every namespace, with its scheduler's and dedup's.
    assert after["puts"] >= before["puts"] + 3, (before["puts"], after["puts"])
    assert "scheduler" in after and "dedup" in after


def test_get_by_secondary_past_the_device_bound_is_refused(device):
    # No limit over more pks than the device's max_query_results (10,000): refused with the
    # status that says so, not built whole.
    ns = device.create_namespace(fresh_name("many"))
    with ns.batch() as b:
        for i in range(10_001):
            b.put(b"m%05d" % i, b'{"g": 1}')
    ns.create_index("g")
    with pytest.raises(cerberus.ReplyTooLarge):
        ns.get_by_secondary("g", 1)
    assert len(ns.get_by_secondary("g", 1, limit=10_000)) == 10_000


def test_a_batch_is_one_command_all_or_nothing(device):
    # The device applies a batch whole (one WriteBatch command): a bad write in it leaves
    # every other one unwritten.
    ns = device.create_namespace(fresh_name("atomic"))
    with pytest.raises(cerberus.InvalidKeySize):
        with ns.batch() as b:
            b.put(b"good", b"v")
            b.put(b"", b"empty key")
    assert ns.get(b"good") is None
    with ns.batch() as b:
        for i in range(500):
            b.put(b"b%03d" % i, b"v")
        b.delete(b"b000")
    assert ns.get(b"b499") == b"v" and ns.get(b"b000") is None


def test_connection_refused():
    with pytest.raises(cerberus.ConnectionError):
        cerberus.connect("127.0.0.1:1")


def test_closed_handle(device_address):
    d = cerberus.connect(device_address, admin_secret=ADMIN_SECRET)
    d.close()
    with pytest.raises(cerberus.ShuttingDown):
        d.list_namespaces()


def test_empty_key_is_refused(device):
    # The device checks key sizes (1..max_key_len); the embedded engine takes an empty key.
    ns = device.create_namespace(fresh_name("empty"))
    with pytest.raises(cerberus.InvalidKeySize):
        ns.put(b"", b"x")


def test_a_namespace_opens_by_name_without_the_admin_secret(device, device_address):
    name = fresh_name("byname")
    ns = device.create_namespace(name)
    ns.put(b"k", b"v")
    tenant = cerberus.connect(device_address)
    same = tenant.namespace(name, ns.secret)
    assert same.nsid == ns.nsid and same.get(b"k") == b"v"
    with pytest.raises(cerberus.AccessDenied):
        cerberus.connect(device_address).namespace(fresh_name("nosuch"), ns.secret)


def test_a_lost_secret_is_rekeyed(device, device_address, tmp_path):
    name = fresh_name("rekey")
    ns = device.create_namespace(name)
    ns.put(b"k", b"v")
    kept = tmp_path / "ns.secret"
    # Issue 65: a name that exists with its secret file missing raised a bare
    # FileNotFoundError; now it says what to do.
    with pytest.raises(cerberus.NamespaceExists, match="rekey_namespace"):
        device.create_namespace(name, exist_ok=True, secret_file=str(kept))
    renewed = device.rekey_namespace(name, secret_file=str(kept))
    assert renewed.secret != ns.secret and renewed.get(b"k") == b"v"
    assert kept.read_text().strip() == renewed.secret
    with pytest.raises(cerberus.AccessDenied):
        cerberus.connect(device_address).namespace(ns.nsid, ns.secret)
    # The file now opens it, as a second run of a script would.
    again = device.create_namespace(name, exist_ok=True, secret_file=str(kept))
    assert again.nsid == ns.nsid and again.get(b"k") == b"v"
