"""A cluster client meeting a move's fence: a part the move has made read-only refuses the
write with ``NamespaceReadOnly``; the cluster client says ``TenantMoving`` (retry after the
move), as it does when the description records the move. A client made from a dict cannot
watch the description, so the device's refusal is all it sees."""

import pytest

import cerberus
from conftest import ADMIN_SECRET, fresh_name


def _fenced_tenant(device, device_address, tmp_path):
    """A one-part tenant on the suite's device, described as a dict: (cluster namespace, the
    part's nsid)."""
    name = fresh_name("fence")
    secret_file = tmp_path / f"{name}.secret"
    part = device.create_namespace(name, secret_file=str(secret_file))
    (tmp_path / "admin.secret").write_text(ADMIN_SECRET + "\n")
    desc = {"devices": {"d0": {"address": device_address,
                               "admin_secret_file": "admin.secret"}},
            "tenants": {name: {"devices": ["d0"], "generation": 1,
                               "parts": {"d0": {"namespace": name, "nsid": part.nsid,
                                                "secret_file": secret_file.name}}}}}
    cluster = cerberus.connect_cluster(desc, base_dir=str(tmp_path))
    return cluster.namespace(name), part.nsid


def test_a_write_to_a_read_only_part_raises_tenant_moving(device, device_address, tmp_path):
    ns, nsid = _fenced_tenant(device, device_address, tmp_path)
    ns.put(b"k", b"before")
    device.set_read_only(nsid, True)
    writes = [lambda: ns.put(b"k", b"during"), lambda: ns.delete(b"k"),
              lambda: ns.write_batch(puts=[(b"a", b"b")]), lambda: ns.create_index("n")]
    for write in writes:
        with pytest.raises(cerberus.TenantMoving) as e:
            write()
        assert isinstance(e.value.__cause__, cerberus.NamespaceReadOnly)
        assert "d0" in str(e.value) and "retry" in str(e.value)
    # Reads go on; nothing was written.
    assert ns.get(b"k") == b"before"
    assert ns.get(b"a") is None
    device.set_read_only(nsid, False)
    ns.put(b"k", b"after")
    assert ns.get(b"k") == b"after"
