"""Backups: Db.checkpoint on the embedded engine, Device.backup on a device (admin)."""

import pytest

import cerberus
from conftest import ADMIN_SECRET, start_device, stop


def test_embedded_checkpoint_opens_to_the_same_data(tmp_path):
    with cerberus.open(str(tmp_path / "db")) as db:
        ns = db.create_namespace("app", capacity=1 << 20)
        for i in range(200):
            ns.put(b"k%03d" % i, b"v%d" % i)
        info = db.checkpoint(tmp_path / "copy")
        assert info["sequence"] >= 200
        assert ns.nsid in info["namespaces"]
        with pytest.raises(cerberus.CerberusError, match="exists"):
            db.checkpoint(tmp_path / "copy")
        ns.put(b"after", b"1")
    with cerberus.open(str(tmp_path / "copy")) as copy:
        app = copy.namespace("app")
        assert app.get(b"k123") == b"v123"
        assert app.get(b"after") is None


def test_device_backup_is_admin_only_and_serves_the_same_data(tmp_path):
    proc, address, log = start_device(tmp_path / "dev", ADMIN_SECRET)
    try:
        with cerberus.connect(address, admin_secret=ADMIN_SECRET) as dev:
            ns = dev.create_namespace("app")
            for i in range(100):
                ns.put(b"k%03d" % i, b"v%d" % i)
            with pytest.raises(cerberus.AccessDenied):
                cerberus.connect(address).backup(str(tmp_path / "denied"))
            (tmp_path / "restored").mkdir()
            info = dev.backup(str(tmp_path / "restored" / "data"))
            assert info["dir"].endswith("restored/data")
            assert info["namespaces"] == 1
            with pytest.raises(cerberus.InvalidField, match="exists"):
                dev.backup(str(tmp_path / "restored" / "data"))
            nsid, secret = ns.nsid, ns.secret
    finally:
        stop(proc)
        log.close()
    assert not (tmp_path / "denied").exists()
    proc, address, log = start_device(tmp_path / "restored", ADMIN_SECRET)
    try:
        copy = cerberus.connect(address).namespace(nsid, secret)
        assert copy.get(b"k042") == b"v42"
    finally:
        stop(proc)
        log.close()
