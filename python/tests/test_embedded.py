"""What only an embedded database does: options, reopening, closing."""

import time

import pytest

import cerberus


def test_data_survives_reopen(tmp_path):
    path = str(tmp_path / "db")
    with cerberus.open(path, sync=True) as db:
        ns = db.create_namespace("keep")
        ns.put(b"k", b"v")
    with cerberus.open(path) as db:
        assert db.namespace("keep").get(b"k") == b"v"
        nsid = db.namespace("keep").nsid
        assert db.namespace(nsid).name == "keep"


def test_open_makes_the_folder_but_not_its_parents(tmp_path):
    # Issue 65: cerberus.open("/no/such/dir/db") made every parent, silently.
    with pytest.raises(FileNotFoundError, match="parent folder"):
        cerberus.open(str(tmp_path / "no" / "such" / "db"))
    assert not (tmp_path / "no").exists()
    with cerberus.open(tmp_path / "db") as db:   # a path-like, its folder made
        db.create_namespace("x")
    assert (tmp_path / "db").is_dir()


def test_unknown_option_is_a_type_error(tmp_path):
    with pytest.raises(TypeError):
        cerberus.open(str(tmp_path / "db"), no_such_option=1)


def _flushes_after_3mb(path, wait, **options):
    with cerberus.open(path, **options) as db:
        ns = db.create_namespace("small")
        for i in range(3000):
            ns.put(b"k%05d" % i, b"x" * 1000)
        assert ns.get(b"k02999") == b"x" * 1000
        # Flushes run in the background: wait for the first, if one is expected.
        deadline = time.monotonic() + wait
        while db.stats()["flushes"] == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        return db.stats()["flushes"]


def test_options_are_applied(tmp_path):
    # 3 MB of puts fit the default 64 MiB memtable (no flush), not a 1 MiB one.
    assert _flushes_after_3mb(str(tmp_path / "default"), 0) == 0
    small = _flushes_after_3mb(
        str(tmp_path / "small"), 30, memtable_bytes=1 << 20, cache_bytes=1 << 20
    )
    assert small >= 1


def test_closed_database_refuses_calls(tmp_path):
    db = cerberus.open(str(tmp_path / "db"))
    ns = db.create_namespace("x")
    db.close()
    with pytest.raises(cerberus.ShuttingDown):
        ns.put(b"k", b"v")


def test_unknown_namespace(db):
    with pytest.raises(cerberus.InvalidNamespace):
        db.namespace("nope")
    with pytest.raises(cerberus.InvalidNamespace):
        db.namespace(12345)


def test_database_stats(db):
    db.create_namespace("s").put(b"k", b"v")
    assert "levels" in db.stats()
