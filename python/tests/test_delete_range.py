"""Deleting by key range and by prefix (issue 65), on an embedded database and on a device:
the count, end exclusive, other namespaces untouched, refused while read-only."""

import pytest

import cerberus
from conftest import fresh_name


def _keys(ns):
    return [k for k, _ in ns.scan(keys_only=True)]


def test_delete_range_and_prefix(target):
    ns = target.create_namespace(fresh_name("dr"))
    other = target.create_namespace(fresh_name("dr-other"))
    for i in range(30):
        ns.put(b"user:%03d" % i, b"v")
        other.put(b"user:%03d" % i, b"v")
    for k in (b"users", b"item:1", b"item:2"):
        ns.put(k, b"v")
    assert ns.delete_range(b"user:010", b"user:020") == 10
    assert ns.contains(b"user:009") and ns.contains(b"user:020")
    assert not ns.contains(b"user:010") and not ns.contains(b"user:019")
    assert ns.delete_prefix("user:") == 20
    assert _keys(ns) == [b"item:1", b"item:2", b"users"]
    assert len(_keys(other)) == 30
    # No end: to the last key; an inverted range deletes nothing.
    assert ns.delete_range(b"z", b"a") == 0
    assert ns.delete_range(b"item:2") == 2
    assert _keys(ns) == [b"item:1"]


def test_a_read_only_namespace_refuses_a_range_delete(device, device_address):
    ns = device.create_namespace(fresh_name("dr-ro"))
    ns.put(b"k1", b"v")
    device.set_read_only(ns, True)
    with cerberus.connect(device_address) as tenant_dev:
        tenant = tenant_dev.namespace(ns.nsid, ns.secret)
        with pytest.raises(cerberus.NamespaceReadOnly):
            tenant.delete_prefix(b"k")
        with pytest.raises(cerberus.NamespaceReadOnly):
            tenant.delete_range(b"a", b"z")
        assert tenant.get(b"k1") == b"v"
    device.set_read_only(ns, False)
