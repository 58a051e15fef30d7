"""The namespace data calls, on an embedded database and on a device."""

import pytest

import cerberus
from conftest import fresh_name


def test_put_get_delete_contains(target):
    ns = target.create_namespace(fresh_name("kv"))
    assert ns.get(b"a") is None
    ns.put(b"a", b"1")
    ns.put("b", "two")  # str is stored as UTF-8
    assert ns.get(b"a") == b"1"
    assert ns.get(b"b") == b"two"
    assert ns.contains(b"a") and b"a" in ns
    assert ns[b"a"] == b"1"
    ns[b"c"] = b"3"
    assert ns.delete(b"a") is True
    assert ns.delete(b"a") is False
    assert ns.get(b"a") is None
    assert not ns.contains(b"a") and b"a" not in ns
    with pytest.raises(cerberus.KeyNotFound):
        ns[b"a"]
    assert ns.get_many([b"b", b"a", b"c"]) == [b"two", None, b"3"]


def test_binary_values_round_trip(target):
    ns = target.create_namespace(fresh_name("bin"))
    value = bytes(range(256)) * 64
    ns.put(b"\x00\xffkey", value)
    assert ns.get(b"\x00\xffkey") == value
    ns.put(bytearray(b"ba"), memoryview(b"mv"))
    assert ns.get(b"ba") == b"mv"


def test_bad_key_type_is_a_type_error(target):
    ns = target.create_namespace(fresh_name("types"))
    with pytest.raises(TypeError):
        ns.put(12, b"x")


def test_batch(target):
    ns = target.create_namespace(fresh_name("batch"))
    ns.put(b"gone", b"x")
    with ns.batch() as b:
        for i in range(100):
            b.put(b"k%03d" % i, b"v%d" % i)
        b.delete(b"gone")
    assert ns.get(b"k042") == b"v42"
    assert ns.get(b"gone") is None
    # An exception inside the block writes nothing.
    with pytest.raises(RuntimeError):
        with ns.batch() as b:
            b.put(b"never", b"x")
            raise RuntimeError("abandon")
    assert ns.get(b"never") is None


def test_scan_ranges_and_prefixes(target):
    ns = target.create_namespace(fresh_name("scan"))
    ns.write_batch(puts=[(b"user:%04d" % i, b"u%d" % i) for i in range(1500)]
                   + [(b"item:%d" % i, b"i") for i in range(10)])
    users = list(ns.scan(prefix=b"user:"))
    assert len(users) == 1500
    assert users[0] == (b"user:0000", b"u0")
    assert [k for k, _ in users] == sorted(k for k, _ in users)
    part = list(ns.scan(start=b"user:0100", end=b"user:0110"))
    assert [k for k, _ in part] == [b"user:%04d" % i for i in range(100, 110)]
    assert list(ns.keys(prefix=b"item:")) == sorted(b"item:%d" % i for i in range(10))
    assert all(v == b"" for _, v in ns.scan(prefix=b"item:", keys_only=True))


def test_scan_is_a_snapshot(target):
    ns = target.create_namespace(fresh_name("snap"))
    for i in range(10):
        ns.put(b"k%d" % i, b"old")
    it = ns.scan()
    first = next(it)
    ns.put(b"k9", b"new")
    ns.put(b"k99", b"added")
    rest = list(it)
    assert first == (b"k0", b"old")
    assert (b"k9", b"old") in rest
    assert all(k != b"k99" for k, _ in rest)


def test_namespaces_are_isolated(target):
    a = target.create_namespace(fresh_name("tenant-a"))
    b = target.create_namespace(fresh_name("tenant-b"))
    a.put(b"shared-key", b"from a")
    assert b.get(b"shared-key") is None
    b.put(b"shared-key", b"from b")
    assert a.get(b"shared-key") == b"from a"
    assert [k for k, _ in b.scan()] == [b"shared-key"]


def test_namespace_lifecycle(target):
    name = fresh_name("life")
    ns = target.create_namespace(name)
    ns.put(b"k", b"v")
    assert {"nsid": ns.nsid, "name": name} in target.list_namespaces()
    with pytest.raises(cerberus.NamespaceExists):
        target.create_namespace(name)
    target.destroy_namespace(ns.nsid)
    assert all(n["nsid"] != ns.nsid for n in target.list_namespaces())
    with pytest.raises(cerberus.CerberusError):
        ns.get(b"k")


def test_indexes(target):
    ns = target.create_namespace(fresh_name("idx"))
    ns.put(b"r1", b'{"city": "Oslo", "n": 1}')
    ns.create_index("city")
    ns.create_index("n", kind="classic")
    attrs = sorted(i["attr"] for i in ns.list_indexes())
    assert attrs == ["city", "n"]
    with pytest.raises(cerberus.IndexExists):
        ns.create_index("city")
    ns.drop_index("n")
    with pytest.raises(cerberus.IndexNotFound):
        ns.drop_index("n")
    with pytest.raises(cerberus.InvalidField):
        ns.create_index("x", kind="btree")


def test_stats(target):
    ns = target.create_namespace(fresh_name("stats"))
    ns.put(b"k", b"v")
    ns.put(b"k2", b"v2")
    ns.get(b"k")
    ns.get(b"absent")
    ns.delete(b"k2")
    s = ns.stats()
    # This namespace's own counters: its two puts, its delete, at least its two gets (a
    # device's delete looks the key up too).
    assert s["puts"] == 2, s
    assert s["deletes"] == 1, s
    assert s["gets"] >= 2, s
    assert isinstance(s["levels"], list)


def test_an_index_past_the_namespaces_limit_raises_index_limit(target):
    ns = target.create_namespace(fresh_name("many"))
    ns.put(b"r", b'{"a0": 1}')
    for i in range(16):  # the engine's max_indexes_per_namespace
        ns.create_index(f"a{i}")
    with pytest.raises(cerberus.IndexLimit):
        ns.create_index("a16")
    assert len(ns.list_indexes()) == 16


def test_errors_share_one_base():
    for name in ["KeyNotFound", "AccessDenied", "InvalidNamespace", "NamespaceExists",
                 "IndexExists", "IndexLimit", "IndexNotFound", "InvalidField", "ShuttingDown",
                 "ReplyTooLarge",
                 "ConnectionError", "StorageError", "Corrupted"]:
        assert issubclass(getattr(cerberus, name), cerberus.CerberusError)


def test_create_namespace_exist_ok_opens_the_one_there(target, tmp_path):
    name = fresh_name("again")
    if isinstance(target, cerberus.Db):
        first = target.create_namespace(name, exist_ok=True)
        first.put(b"k", b"v")
        again = target.create_namespace(name, exist_ok=True)
    else:
        secret_file = tmp_path / "ns.secret"
        first = target.create_namespace(name, exist_ok=True, secret_file=str(secret_file))
        assert secret_file.read_text().strip() == first.secret
        first.put(b"k", b"v")
        # The device keeps only a hash of the credential: without the file, no way in.
        with pytest.raises(cerberus.NamespaceExists, match="secret_file"):
            target.create_namespace(name, exist_ok=True)
        again = target.create_namespace(name, exist_ok=True, secret_file=str(secret_file))
        assert again.secret == first.secret
        assert target.namespace(name, first.secret).nsid == first.nsid
        with pytest.raises(cerberus.InvalidNamespace):
            target.namespace(fresh_name("nowhere"), first.secret)
    assert again.nsid == first.nsid and again.name == name
    assert again.get(b"k") == b"v"
    with pytest.raises(cerberus.NamespaceExists):
        target.create_namespace(name)


def test_create_index_exist_ok_only_for_the_same_kind(target):
    ns = target.create_namespace(fresh_name("idx-again"))
    ns.put(b"r1", b'{"city": "Oslo"}')
    ns.create_index("city", kind="vas", exist_ok=True)
    ns.create_index("city", kind="vas", exist_ok=True)
    assert [i["attr"] for i in ns.list_indexes()] == ["city"]
    with pytest.raises(cerberus.IndexExists):
        ns.create_index("city", kind="classic", exist_ok=True)
    with pytest.raises(cerberus.IndexExists):
        ns.create_index("city")
