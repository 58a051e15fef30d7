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
    assert isinstance(device.stats(), dict)


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
