"""Tenants across devices (cerberus.cluster): three devices on loopback ports, a tenant made
of one namespace on each, and the same calls on one device's namespace answering alike."""

import json
import os
import random
import subprocess
import threading
import time

import pytest

import cerberus
from cerberus import _cerberus
from conftest import _binary, fresh_name, start_device, stop

dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")


def _start(data, admin_secret, port=None):
    """A device on a free loopback port (or ``port``) with its own data dir and admin
    secret."""
    return start_device(data, admin_secret, port or 0)


class Devices:
    """Started devices: name -> (address, admin secret, admin secret file, process)."""

    def __init__(self, root, n):
        self.root = root
        self.names = [f"dev{i}" for i in range(n)]
        self.info = {}
        for i, name in enumerate(self.names):
            secret = f"cluster-suite-admin-{i}-0123456789abcdef"
            secret_file = root / f"{name}.admin"
            secret_file.write_text(secret + "\n")
            proc, address, log = _start(root / name, secret)
            self.info[name] = (address, secret, secret_file, proc, log)

    def address(self, name):
        return self.info[name][0]

    def admin(self, name):
        return cerberus.connect(self.info[name][0], admin_secret=self.info[name][1])

    def stop(self, name):
        stop(self.info[name][3])

    def restart(self, name):
        """A stopped device started again on its port and data."""
        address, secret, secret_file, _, log = self.info[name]
        log.close()
        port = int(address.rsplit(":", 1)[1])
        proc, address, log = _start(self.root / name, secret, port)
        self.info[name] = (address, secret, secret_file, proc, log)

    def close(self):
        for address, _, _, proc, log in self.info.values():
            stop(proc)
            log.close()

    def tenant(self, name, devices, moving_to=None):
        """Namespaces for tenant ``name`` on ``devices`` (and ``moving_to``), and the
        description dict (relative secret files: taken from ``self.root``)."""
        desc = {"devices": {d: {"address": self.address(d),
                                "admin_secret_file": f"{d}.admin"} for d in self.names},
                "tenants": {}}
        parts = {}
        for d in sorted(set(devices) | set(moving_to or [])):
            secret_file = f"{name}-{d}.secret"
            with self.admin(d) as dev:
                dev.create_namespace(name, secret_file=str(self.root / secret_file))
            parts[d] = {"namespace": name, "secret_file": secret_file}
        tenant = {"devices": list(devices), "generation": 1,
                  "parts": {d: parts[d] for d in devices}}
        if moving_to:
            tenant["moving_to"] = list(moving_to)
            tenant["moving_parts"] = {d: parts[d] for d in moving_to}
        desc["tenants"][name] = tenant
        return desc


@pytest.fixture(scope="module")
def trio(tmp_path_factory):
    devices = Devices(tmp_path_factory.mktemp("cluster"), 3)
    try:
        yield devices
    finally:
        devices.close()


def _tenant(trio, devices=None):
    name = fresh_name("tenant")
    desc = trio.tenant(name, devices or trio.names)
    cluster = cerberus.connect_cluster(desc, base_dir=str(trio.root))
    return cluster, cluster.namespace(name)


def _key(rng):
    # Mostly text keys (some given as str), some not UTF-8, shared prefixes for prefix scans.
    n = rng.randrange(300)
    if n % 11 == 0:
        return bytes([0xFF, n % 256])
    key = f"k{n % 7}:{n:03d}"
    return key if n % 5 == 0 else key.encode()


def test_random_operations_answer_as_one_device(trio, device):
    _, ns = _tenant(trio)
    one = device.create_namespace(fresh_name("single"))
    rng = random.Random(35)
    for step in range(2500):
        op = rng.random()
        k = _key(rng)
        if op < 0.35:
            v = f"v{step}".encode()
            assert ns.put(k, v) == one.put(k, v)
        elif op < 0.55:
            assert ns.get(k) == one.get(k)
            assert (k in ns) == (k in one) == ns.contains(k)
        elif op < 0.65:
            assert ns.delete(k) == one.delete(k)
        elif op < 0.80:
            keys = [_key(rng) for _ in range(rng.randrange(1, 25))]
            assert ns.get_many(keys) == one.get_many(keys)
        elif op < 0.92:
            puts = [(_key(rng), f"b{step}-{i}".encode()) for i in range(rng.randrange(8))]
            deletes = [_key(rng) for _ in range(rng.randrange(4))]
            if rng.random() < 0.5:
                ns.write_batch(puts=puts, deletes=deletes)
            else:
                with ns.batch() as b:
                    for pk, v in puts:
                        b.put(pk, v)
                    for pk in deletes:
                        b.delete(pk)
            one.write_batch(puts=puts, deletes=deletes)
        else:
            a, b = sorted(k.encode() if isinstance(k, str) else k
                          for k in (_key(rng), _key(rng)))
            prefix = f"k{rng.randrange(7)}:".encode() if rng.random() < 0.3 else None
            start = a if rng.random() < 0.5 else None
            end = b if rng.random() < 0.5 else None
            keys_only = rng.random() < 0.3
            assert list(ns.scan(start, end, prefix, keys_only)) == \
                list(one.scan(start, end, prefix, keys_only))
            assert list(ns.keys(start, end, prefix)) == list(one.keys(start, end, prefix))
    assert list(ns.scan()) == list(one.scan())
    missing = b"k0:never"
    with pytest.raises(cerberus.KeyNotFound):
        ns[missing]


def test_keys_land_where_cluster_owner_says(trio):
    cluster, ns = _tenant(trio)
    keys = [f"placed:{i}".encode() for i in range(120)]
    ns.write_batch(puts=[(k, b"x") for k in keys])
    held = {}
    for d in trio.names:
        secret = (trio.root / f"{ns.name}-{d}.secret").read_text().strip()
        with trio.admin(d) as dev:
            held[d] = set(dev.namespace(ns.name, secret).keys())
    for k in keys:
        owner = trio.names[_cerberus.cluster_owner(k, trio.names)]
        assert ns.owner(k) == owner
        assert [d for d in trio.names if k in held[d]] == [owner]
    # Rendezvous hashing spreads them: every device holds some.
    assert all(held[d] for d in trio.names)


CITIES = ["Oslo", "Lima", "Kyiv", "Pune", "Hobart"]


@pytest.fixture(scope="module")
def records(trio, tmp_path_factory):
    """The same 400 records in a 3-device tenant and in a namespace of a fourth device,
    indexed alike."""
    _, ns = _tenant(trio)
    with cerberus.connect(trio.address(trio.names[0]), admin_secret=trio.info["dev0"][1]) as d0:
        one = d0.create_namespace(fresh_name("single-q"))
    rng = random.Random(7)
    puts = []
    for i in range(400):
        rec = {"city": rng.choice(CITIES), "stars": rng.randrange(1, 6),
               # Not always a number: avg must average the numbers only.
               "rating": rng.randrange(11) if rng.random() < 0.9 else "n/a"}
        if i % 50 == 0:  # a few objects and arrays, their fields not all alike
            rec["loc"] = {"lat": i % 90} if i % 100 else {"lat": 1, "lon": -2.5}
            rec["tags"] = ["t"] * (i % 3)
        if rng.random() < 0.8:  # missing elsewhere; null sometimes; quarters add exactly
            rec["price"] = None if rng.random() < 0.1 else rng.randrange(400) / 4
        puts.append((f"r{i:04d}".encode(), json.dumps(rec).encode()))
    ns.write_batch(puts=puts)
    one.write_batch(puts=puts)
    for target in (ns, one):
        target.create_index("city")
        target.create_index("stars", kind="classic")
    return ns, one


def _frame(df):
    df = df.sort_values("_pk").reset_index(drop=True)
    return df[sorted(df.columns)]


@pytest.mark.parametrize("kwargs", [
    {},
    {"filter": {"city": "Oslo"}},
    {"filter": {"stars": {"$gte": 3}}, "project": ["city", "price"]},
    {"filter": {"city": "Lima", "stars": {"$lt": 4}}},
    {"filter": {"price": {"$gt": 50}}, "project": ["price"]},
    {"filter": {"stars": 5}, "keys_only": True},
    {"filter": {"price": {"$gte": 0}}, "limit": 17},
    {"limit": 40, "project": ["stars"]},
    {"filter": {"city": "Nowhere"}, "project": ["city"]},
])
def test_find_through_dask_equals_one_device(records, kwargs):
    ns, one = records
    ddf = ns.find(**kwargs)
    assert isinstance(ddf, dd.DataFrame)
    assert ddf.npartitions == 3
    got = ddf.compute()
    want = one.find(**kwargs).to_pandas()
    if kwargs.get("filter") == {"city": "Nowhere"}:
        assert len(got) == len(want) == 0
        return
    assert len(want) > 0
    assert set(got.columns) == set(want.columns)
    pd.testing.assert_frame_equal(_frame(got), _frame(want), check_dtype=False)


def test_find_frames_work_lazily(records):
    ns, one = records
    ddf = ns.find(project=["stars", "city"])
    want = one.find(project=["stars", "city"]).to_pandas()
    assert ddf.stars.sum().compute() == want.stars.sum()
    got = ddf[ddf.stars >= 4].compute()
    assert sorted(got._pk) == sorted(want[want.stars >= 4]._pk)
    by_city = ddf.groupby("city").stars.count().compute().sort_index()
    pd.testing.assert_series_equal(by_city, want.groupby("city").stars.count().sort_index(),
                                   check_dtype=False)


def test_top_get_by_secondary_and_aggregates_equal_one_device(records):
    ns, one = records
    assert ns.list_indexes() == one.list_indexes()
    for by, k, desc, flt, project in [
        ("stars", 5, False, None, None), ("stars", 17, True, None, ["city"]),
        ("price", 30, True, {"city": "Oslo"}, None), ("price", 500, False, None, ["stars"]),
        ("city", 12, True, {"stars": {"$gte": 2}}, None), ("city", 3, False, None, None),
        ("rating", 40, True, None, ["city"]), ("rating", 25, False, {"city": "Lima"}, None),
    ]:
        assert ns.top(by, k, filter=flt, desc=desc, project=project) == \
            one.top(by, k, filter=flt, desc=desc, project=project), (by, k, desc)
    for value in ("Oslo", "Pune"):
        assert ns.get_by_secondary("city", value) == one.get_by_secondary("city", value)
    assert ns.get_by_secondary("stars", 3, limit=9) == one.get_by_secondary("stars", 3, limit=9)
    for flt in (None, {"city": "Kyiv"}, {"stars": {"$gt": 3}}, {"city": "Nowhere"}):
        for fn, attr in [("count", None), ("count", "price"), ("sum", "price"),
                         ("sum", "stars"), ("avg", "price"), ("avg", "stars"),
                         ("min", "price"), ("max", "price"), ("min", "city"),
                         ("max", "city"), ("min", "stars"), ("max", "stars"),
                         ("count", "rating"), ("sum", "rating"), ("avg", "rating"),
                         ("min", "rating"), ("max", "rating")]:
            assert ns.aggregate(fn, attr, filter=flt) == one.aggregate(fn, attr, filter=flt), \
                (fn, attr, flt)
    stats = ns.stats()
    assert [p["device"] for p in stats["parts"]] == ns.devices
    assert stats["puts"] == sum(p["puts"] for p in stats["parts"]) >= 400
    assert stats["levels"][0]["tables"] == sum(p["levels"][0]["tables"] for p in stats["parts"])
    assert "nsid" not in stats and stats["shares"] == stats["parts"][0]["shares"]


def test_writes_during_a_move_raise_tenant_moving_and_reads_go_on(trio):
    name = fresh_name("moving")
    before = trio.tenant(name, trio.names[:2])
    ns = cerberus.connect_cluster(before, base_dir=str(trio.root)).namespace(name)
    puts = [(f"m{i}".encode(), json.dumps({"n": i}).encode()) for i in range(50)]
    ns.write_batch(puts=puts)
    # The description as a move to all three devices writes it (its new part made).
    with trio.admin("dev2") as dev:
        dev.create_namespace(name, secret_file=str(trio.root / f"{name}-dev2.secret"))
    moving = json.loads(json.dumps(before))
    tenant = moving["tenants"][name]
    tenant["moving_to"] = list(trio.names)
    tenant["moving_parts"] = dict(tenant["parts"], dev2={"namespace": name,
                                                         "secret_file": f"{name}-dev2.secret"})
    ns = cerberus.connect_cluster(moving, base_dir=str(trio.root)).namespace(name)
    writes = [lambda: ns.put(b"m1", b"x"), lambda: ns.delete(b"m1"),
              lambda: ns.__setitem__(b"m1", b"x"), lambda: ns.write_batch(puts=[(b"a", b"b")]),
              lambda: ns.create_index("n")]
    for write in writes:
        with pytest.raises(cerberus.TenantMoving) as e:
            write()
        assert name in str(e.value) and "resume" in str(e.value)
    with pytest.raises(cerberus.TenantMoving):
        with ns.batch() as b:
            b.put(b"m2", b"y")
    assert ns.get(b"m1") == puts[1][1]
    assert ns.get_many([k for k, _ in puts]) == [v for _, v in puts]
    assert list(ns.scan()) == sorted(puts)
    assert ns.aggregate("sum", "n") == sum(range(50))
    assert ns.devices == trio.names[:2]


def test_a_device_down_fails_the_calls_that_need_it_only(tmp_path):
    devices = Devices(tmp_path, 3)
    try:
        cluster, ns = _tenant(devices)
        _, beside = _tenant(devices, ["dev0", "dev2"])
        keys = [f"d{i}".encode() for i in range(60)]
        puts = [(k, json.dumps({"k": k.decode()}).encode()) for k in keys]
        ns.write_batch(puts=puts)
        beside.write_batch(puts=puts)
        devices.stop("dev1")
        address = devices.address("dev1")
        for k in keys:
            if ns.owner(k) == "dev1":
                with pytest.raises(cerberus.ClusterDeviceError) as e:
                    ns.get(k)
                assert e.value.device == "dev1" and e.value.address == address
                assert "dev1" in str(e.value) and address in str(e.value)
                assert isinstance(e.value, cerberus.ConnectionError)
            else:
                assert ns.get(k) == dict(puts)[k]
        with pytest.raises(cerberus.ClusterDeviceError, match="dev1"):
            list(ns.scan())
        with pytest.raises(cerberus.ClusterDeviceError, match="dev1"):
            ns.aggregate("count")
        with pytest.raises(cerberus.ClusterDeviceError, match="dev1"):
            ns.find().compute()
        # With meta given nothing is read until compute.
        lazy = ns.find(meta={"_pk": "object", "k": "object"})
        with pytest.raises(cerberus.ClusterDeviceError, match="dev1"):
            lazy.compute()
        # The tenant on the other two devices is served as before.
        assert [k for k, _ in beside.scan()] == sorted(keys)
        assert beside.find().compute().shape[0] == len(keys)
        # Back up, the device is dialled again by the next call.
        devices.restart("dev1")
        assert ns.get_many(keys) == [v for _, v in puts]
    finally:
        devices.close()


def test_description_checks(trio):
    with pytest.raises(ValueError, match="no parts entry"):
        cerberus.connect_cluster({"devices": {"a": {"address": "127.0.0.1:1"}},
                                  "tenants": {"t": {"devices": ["a"], "generation": 1,
                                                    "parts": {}}}})
    with pytest.raises(ValueError, match="does not list"):
        cerberus.connect_cluster({"devices": {}, "tenants": {"t": {
            "devices": ["b"], "generation": 1,
            "parts": {"b": {"namespace": "t", "secret_file": "s"}}}}})
    with pytest.raises(ValueError, match="generation"):
        cerberus.connect_cluster({"devices": {}, "tenants": {"t": {"devices": []}}})
    cluster, _ = _tenant(trio)
    with pytest.raises(cerberus.InvalidNamespace, match="no tenant"):
        cluster.namespace("nope")
    with pytest.raises(ValueError):
        _cerberus.cluster_owner(b"k", [])
    name = fresh_name("nosecret")
    desc = trio.tenant(name, trio.names)
    desc["tenants"][name]["parts"]["dev1"]["secret_file"] = "missing.secret"
    ns = cerberus.connect_cluster(desc, base_dir=str(trio.root)).namespace(name)
    with pytest.raises(FileNotFoundError, match="credential on device 'dev1'"):
        ns.aggregate("count")
    # The admin secret as the Rust side reads it: the environment variable first, the file
    # when the variable is unset, an error naming the variable when there is no file.
    name = fresh_name("envsecret")
    desc = trio.tenant(name, trio.names)
    unset = "CERBERUS_CLUSTER_SUITE_UNSET_SECRET"
    os.environ.pop(unset, None)
    desc["devices"]["dev0"]["admin_secret_env"] = unset
    ns = cerberus.connect_cluster(desc, base_dir=str(trio.root)).namespace(name)
    assert ns.aggregate("count") == 0
    del desc["devices"]["dev0"]["admin_secret_file"]
    ns = cerberus.connect_cluster(desc, base_dir=str(trio.root)).namespace(name)
    with pytest.raises(ValueError, match=unset):
        ns.aggregate("count")


def test_a_description_file_is_read_by_the_rust_loader(trio, tmp_path):
    name = fresh_name("file")
    desc = trio.tenant(name, trio.names)
    lines = []
    for d, dev in desc["devices"].items():
        lines += [f"[devices.{d}]", f'address = "{dev["address"]}"',
                  f'admin_secret_file = "{trio.root / dev["admin_secret_file"]}"', ""]
    lines += [f"[tenants.{name}]", f"devices = {json.dumps(trio.names)}", "generation = 1", ""]
    for d in trio.names:
        # Relative to the description's folder: the credentials are copied next to it.
        (tmp_path / f"{d}.secret").write_text((trio.root / f"{name}-{d}.secret").read_text())
        lines += [f"[tenants.{name}.parts.{d}]", f'namespace = "{name}"',
                  f'secret_file = "{d}.secret"', ""]
    path = tmp_path / "cluster.toml"
    path.write_text("\n".join(lines))
    ns = cerberus.connect_cluster(str(path)).namespace(name)
    ns.write_batch(puts=[(f"f{i}".encode(), b"1") for i in range(30)])
    assert len(list(ns.keys())) == 30
    loaded = cerberus.connect_cluster(path).description
    assert loaded["tenants"][name]["devices"] == trio.names
    assert loaded["devices"]["dev0"]["address"] == trio.address("dev0")
    broken = tmp_path / "broken.toml"
    broken.write_text(f"[tenants.{name}]\ndevices = [\"nowhere\"]\ngeneration = 1\n")
    with pytest.raises(ValueError, match="broken.toml"):
        cerberus.connect_cluster(str(broken))
    with pytest.raises(OSError):
        cerberus.connect_cluster(str(tmp_path / "missing.toml"))


def _cli(path, *args):
    return subprocess.run([_binary(), "cluster", "--file", str(path), *args], check=True,
                          capture_output=True, text=True).stdout


def test_a_tenant_made_and_moved_by_the_cli(trio, tmp_path):
    """The description `cerberus cluster` writes is read as it is; after a move, a client
    that loads the new description reads everything from the new devices."""
    if subprocess.run([_binary(), "cluster", "--help"], capture_output=True).returncode:
        pytest.skip("this cerberus binary has no `cluster` command")
    path = tmp_path / "cluster.toml"
    _cli(path, "init")
    for d in trio.names:
        _cli(path, "add-device", d, trio.address(d), "--admin-secret-file",
             str(trio.info[d][2]))
    name = fresh_name("cli").replace("-", "_")
    _cli(path, "create", name, "--devices", ",".join(trio.names))
    ns = cerberus.connect_cluster(path).namespace(name)
    puts = [(f"c{i:03d}".encode(), json.dumps({"i": i}).encode()) for i in range(200)]
    ns.write_batch(puts=puts)
    digest = json.loads(_cli(path, "digest", name, "--json"))
    assert digest["records"] == len(puts)
    _cli(path, "reshard", name, "--devices", "dev0,dev2")
    moved = cerberus.connect_cluster(path).namespace(name)
    assert moved.devices == ["dev0", "dev2"]
    assert list(moved.scan()) == puts
    assert moved.aggregate("sum", "i") == sum(range(200))
    moved.put(b"after", b"{}")
    assert moved.get(b"after") == b"{}"


def test_a_client_without_admin_secrets_reads_and_writes_its_tenant_only(trio, tmp_path):
    """The description `cerberus cluster` writes records each part's namespace id: a copy
    holding no admin secret (and only this tenant's credential files) reads and writes the
    tenant, and its connections cannot list or destroy another tenant's namespaces."""
    if subprocess.run([_binary(), "cluster", "--help"], capture_output=True).returncode:
        pytest.skip("this cerberus binary has no `cluster` command")
    admin = tmp_path / "admin"
    admin.mkdir()
    path = admin / "cluster.toml"
    _cli(path, "init")
    for d in trio.names:
        _cli(path, "add-device", d, trio.address(d), "--admin-secret-file",
             str(trio.info[d][2]))
    mine, other = fresh_name("mine").replace("-", "_"), fresh_name("other").replace("-", "_")
    for t in (mine, other):
        _cli(path, "create", t, "--devices", ",".join(trio.names))
    cerberus.connect_cluster(path).namespace(other).put(b"theirs", b"1")

    client = tmp_path / "client"
    client.mkdir()
    text = path.read_text()
    for d in trio.names:
        text = text.replace(f'admin_secret_file = "{trio.info[d][2]}"\n', "")
    assert "admin_secret" not in text
    (client / "cluster.toml").write_text(text)
    desc = cerberus.connect_cluster(client / "cluster.toml").description
    for part in desc["tenants"][mine]["parts"].values():
        assert isinstance(part["nsid"], int)
        (client / part["secret_file"]).parent.mkdir(parents=True, exist_ok=True)
        (client / part["secret_file"]).write_text((admin / part["secret_file"]).read_text())

    with cerberus.connect_cluster(client / "cluster.toml") as cluster:
        ns = cluster.namespace(mine)
        ns.write_batch(puts=[(f"m{i}".encode(), b"v") for i in range(60)])
        assert ns.get_many([f"m{i}".encode() for i in range(60)]) == [b"v"] * 60
        assert ns.aggregate("count") == 60
        for d in trio.names:
            dev = cluster.device(d)
            with pytest.raises(cerberus.CerberusError):
                dev.list_namespaces()
            theirs = desc["tenants"][other]["parts"][d]["nsid"]
            with pytest.raises(cerberus.CerberusError):
                dev.destroy_namespace(theirs)
        with pytest.raises(FileNotFoundError):
            cluster.namespace(other).get(b"theirs")
    assert cerberus.connect_cluster(path).namespace(other).get(b"theirs") == b"1"


def test_a_write_racing_a_move_lands_in_the_new_placement_or_is_refused(trio, tmp_path):
    """A client that loaded the description before a move keeps writing throughout it:
    each write is acknowledged and then found in the final placement, or refused with
    TenantMoving (retried until acknowledged); none is acknowledged and lost."""
    if subprocess.run([_binary(), "cluster", "--help"], capture_output=True).returncode:
        pytest.skip("this cerberus binary has no `cluster` command")
    path = tmp_path / "cluster.toml"
    _cli(path, "init")
    for d in trio.names:
        _cli(path, "add-device", d, trio.address(d), "--admin-secret-file",
             str(trio.info[d][2]))
    name = fresh_name("race").replace("-", "_")
    _cli(path, "create", name, "--devices", "dev0")
    ns = cerberus.connect_cluster(path).namespace(name)
    ns.write_batch(puts=[(f"base{i:05d}".encode(), b"b" * 100) for i in range(3000)])
    acked, refused, stop = [], [0], threading.Event()

    def writer():
        i = 0
        while not stop.is_set():
            key = f"w{i:06d}".encode()
            try:
                ns.put(key, b"x")
            except cerberus.TenantMoving:
                refused[0] += 1
                time.sleep(0.002)
                continue
            acked.append(key)
            i += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        while len(acked) < 20:
            time.sleep(0.01)
        moved = None
        # A write that slipped into the old parts during the copy fails the move (nothing
        # lost: the old placement stays); the move is run again.
        for _ in range(5):
            run = subprocess.run([_binary(), "cluster", "--file", str(path), "reshard", name,
                                  "--devices", "dev1,dev2"], capture_output=True, text=True)
            if run.returncode == 0:
                moved = run
                break
            assert "changed during the copy" in run.stderr, run.stderr
        assert moved is not None, "the move never completed"
        after = len(acked)
        while len(acked) < after + 20:
            time.sleep(0.01)
    finally:
        stop.set()
        thread.join()
    assert refused[0] > 0
    fresh = cerberus.connect_cluster(path).namespace(name)
    assert fresh.devices == ["dev1", "dev2"]
    assert ns.devices == ["dev1", "dev2"], "the writer follows the move"
    assert fresh.get_many(acked) == [b"x"] * len(acked)
    assert fresh.aggregate("count") == 3000 + len(acked)


def test_handles_loaded_before_a_move_write_to_the_new_placement_after_it(trio, tmp_path):
    if subprocess.run([_binary(), "cluster", "--help"], capture_output=True).returncode:
        pytest.skip("this cerberus binary has no `cluster` command")
    path = tmp_path / "cluster.toml"
    _cli(path, "init")
    for d in trio.names:
        _cli(path, "add-device", d, trio.address(d), "--admin-secret-file",
             str(trio.info[d][2]))
    name = fresh_name("follow").replace("-", "_")
    _cli(path, "create", name, "--devices", "dev0")
    cluster = cerberus.connect_cluster(path)
    a, b = cluster.namespace(name), cluster.namespace(name)
    a.put(b"before", b"1")
    _cli(path, "reshard", name, "--devices", "dev1,dev2")
    # Both handles of the cluster follow the move, whichever reads the file first.
    a.put(b"after-a", b"2")
    b.put(b"after-b", b"3")
    assert a.devices == b.devices == ["dev1", "dev2"]
    fresh = cerberus.connect_cluster(path).namespace(name)
    assert fresh.get_many([b"before", b"after-a", b"after-b"]) == [b"1", b"2", b"3"]
