"""A device over TLS: a self-signed certificate made with the openssl command, trusted by
the client through tls_ca; an untrusted certificate is refused."""

import json
import shutil
import socket
import subprocess
import time

import pytest

import cerberus
from conftest import ADMIN_SECRET, _binary, _free_port


def make_cert(dir, name):
    key, cert = dir / f"{name}.key", dir / f"{name}.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-days", "2", "-subj", "/CN=localhost", "-keyout", str(key), "-out", str(cert),
         "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
         "-addext", "basicConstraints=critical,CA:FALSE"],
        check=True, capture_output=True,
    )
    return cert, key


@pytest.fixture(scope="module")
def tls_device(tmp_path_factory):
    if shutil.which("openssl") is None:
        pytest.fail("the TLS tests need the openssl command")
    d = tmp_path_factory.mktemp("tls")
    cert, key = make_cert(d, "device")
    port = _free_port()
    proc = subprocess.Popen(
        [_binary(), "serve", "--data-dir", str(d / "data"), "--listen", f"127.0.0.1:{port}",
         "--admin-secret", ADMIN_SECRET, "--tls-cert", str(cert), "--tls-key", str(key)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise RuntimeError("the TLS device did not start")
            time.sleep(0.05)
    yield f"127.0.0.1:{port}", cert, d
    proc.terminate()
    proc.wait(timeout=20)


def test_tls_round_trip(tls_device):
    address, cert, _ = tls_device
    with cerberus.connect(address, admin_secret=ADMIN_SECRET, tls_ca=str(cert), server_name="localhost") as d:
        ns = d.create_namespace("over-tls")
        ns.put(b"k", b"v")
        assert ns.get(b"k") == b"v"
    # The address's host (an IP the certificate also names) is the default server name.
    with cerberus.connect(address, tls_ca=str(cert)) as d:
        assert d.namespace(ns.nsid, ns.secret).get(b"k") == b"v"


def test_untrusted_certificate_is_refused(tls_device):
    address, _, d = tls_device
    other, _ = make_cert(d, "other")
    with pytest.raises(cerberus.ConnectionError):
        cerberus.connect(address, tls_ca=str(other), server_name="localhost")


def test_plain_client_cannot_talk_to_a_tls_device(tls_device):
    address, _, _ = tls_device
    with pytest.raises(cerberus.CerberusError):
        cerberus.connect(address, admin_secret=ADMIN_SECRET).list_namespaces()


def test_a_cluster_over_tls(tls_device):
    """A tenant on a TLS device through `cerberus cluster` (Rust) and connect_cluster
    (Python): both connect with the description's tls_ca and server_name."""
    address, cert, d = tls_device
    (d / "admin.secret").write_text(ADMIN_SECRET + "\n")
    path = d / "cluster.toml"

    def cli(*args):
        return subprocess.run([_binary(), "cluster", "--file", str(path), *args], check=True,
                              capture_output=True, text=True).stdout

    cli("init")
    cli("add-device", "t0", address, "--tls-ca", str(cert), "--server-name", "localhost",
        "--admin-secret-file", str(d / "admin.secret"))
    cli("create", "tls_tenant", "--devices", "t0")
    ns = cerberus.connect_cluster(path).namespace("tls_tenant")
    ns.write_batch(puts=[(b"a", b"1"), (b"b", b"2")])
    assert ns.get_many([b"a", b"b", b"c"]) == [b"1", b"2", None]
    assert json.loads(cli("digest", "tls_tenant", "--json"))["records"] == 2
    cli("destroy", "tls_tenant")
