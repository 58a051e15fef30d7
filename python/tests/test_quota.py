"""Namespace capacities and shares, embedded and on a device: given at create, refused
writes past the capacity, changed by configure, shown by stats."""

import pytest

import cerberus
from conftest import fresh_name


def test_capacity_refuses_writes_and_configure_changes_it(target):
    ns = target.create_namespace(fresh_name("quota"), capacity=1000, weight=3)
    ns.put(b"a", b"v" * 600)
    with pytest.raises(cerberus.CapacityExceeded):
        ns.put(b"b", b"v" * 600)
    st = ns.stats()
    assert st["capacity"] == 1000
    assert st["shares"]["weight"] == 3
    assert st["used_bytes"] + st["pending_bytes"] >= 601, st

    ns.configure(capacity=1 << 20)
    ns.put(b"b", b"v" * 600)
    st = ns.stats()
    assert st["capacity"] == 1 << 20
    # What configure was not given stays.
    assert st["shares"]["weight"] == 3
    ns.configure(capacity=0, limit_ops=500)
    st = ns.stats()
    assert st["capacity"] is None
    assert st["shares"]["limit_ops"] == 500

    with pytest.raises(cerberus.InvalidField):
        ns.configure(weight=0)
    with pytest.raises(cerberus.InvalidField):
        target.create_namespace(fresh_name("bad"), weight=0)
    with pytest.raises(TypeError):
        ns._native.configure(no_such_setting=1)


def test_device_admin_configures_by_id(device):
    ns = device.create_namespace(fresh_name("byid"), capacity=4096)
    device.configure_namespace(ns.nsid, reservation_ops=10, limit_ops=100)
    st = ns.stats()
    assert st["capacity"] == 4096
    assert st["shares"]["reservation_ops"] == 10
    assert st["shares"]["limit_ops"] == 100
