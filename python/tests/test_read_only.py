"""Read-only namespaces from Python: ``Device.set_read_only`` (the admin's), and what a
tenant of the namespace sees meanwhile."""

import pytest

import cerberus
from conftest import fresh_name


def test_a_read_only_namespace_refuses_writes_and_serves_reads(device, device_address):
    ns = device.create_namespace(fresh_name("ro"))
    # The tenant's own connection, with its credential only.
    with cerberus.connect(device_address) as tenant_dev:
        tenant = tenant_dev.namespace(ns.nsid, ns.secret)
        tenant.put(b"k", b"before")

        device.set_read_only(ns, True)
        with pytest.raises(cerberus.NamespaceReadOnly):
            tenant.put(b"k", b"during")
        with pytest.raises(cerberus.NamespaceReadOnly):
            tenant.delete(b"k")
        with pytest.raises(cerberus.NamespaceReadOnly):
            tenant.write_batch(puts=[(b"b", b"1")])
        assert tenant.get(b"k") == b"before"
        assert tenant.get(b"b") is None
        # Setting it again is no error.
        device.set_read_only(ns.nsid, True)

        device.set_read_only(ns.nsid, False)
        tenant.put(b"k", b"after")
        assert tenant.get(b"k") == b"after"


def test_only_the_admin_sets_read_only(device, device_address):
    ns = device.create_namespace(fresh_name("ro"))
    with cerberus.connect(device_address) as tenant_dev:
        tenant = tenant_dev.namespace(ns.nsid, ns.secret)
        with pytest.raises(cerberus.AccessDenied):
            tenant_dev.set_read_only(ns.nsid, True)
        tenant.put(b"k", b"v")

