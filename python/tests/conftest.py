"""Fixtures: an embedded database in a temporary directory, and a device started on a free
loopback port for the session (the `cerberus` binary: $CERBERUS_BIN, else the workspace's
target/{debug,release}/cerberus, else built with cargo)."""

import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

import cerberus

ROOT = Path(__file__).resolve().parents[2]
ADMIN_SECRET = "python-suite-admin-secret-0123456789"


def _binary() -> str:
    env = os.environ.get("CERBERUS_BIN")
    if env:
        return env
    for profile in ("debug", "release"):
        p = ROOT / "target" / profile / "cerberus"
        if p.exists():
            return str(p)
    subprocess.run(["cargo", "build", "-p", "cerberus-cli"], cwd=ROOT, check=True)
    return str(ROOT / "target" / "debug" / "cerberus")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_device(data: Path, admin_secret: str, port: int = 0):
    """A device on a free loopback port (or ``port``) with its data under ``data``: (process,
    address, log file), once it listens."""
    data.mkdir(parents=True, exist_ok=True)
    port = port or _free_port()
    address = f"127.0.0.1:{port}"
    log = open(data / "device.log", "wb")
    proc = subprocess.Popen(
        [_binary(), "serve", "--data-dir", str(data / "data"), "--listen", address,
         "--admin-secret", admin_secret],
        stdout=log, stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 30
    while True:
        if proc.poll() is not None:
            log.close()
            raise RuntimeError(f"device exited: {(data / 'device.log').read_text()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc, address, log
        except OSError:
            if time.monotonic() > deadline:
                stop(proc)
                log.close()
                raise RuntimeError("device did not start listening in 30 s")
            time.sleep(0.05)


@pytest.fixture(scope="session")
def device_address(tmp_path_factory):
    proc, address, log = start_device(tmp_path_factory.mktemp("device"), ADMIN_SECRET)
    try:
        yield address
    finally:
        stop(proc)
        log.close()


def stop(proc: subprocess.Popen) -> None:
    """Stops a device the suite started: asked first, killed after 20 s."""
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture
def device(device_address):
    with cerberus.connect(device_address, admin_secret=ADMIN_SECRET) as d:
        yield d


@pytest.fixture
def db(tmp_path):
    with cerberus.open(str(tmp_path / "db")) as d:
        yield d


_counter = [0]


def fresh_name(prefix: str) -> str:
    _counter[0] += 1
    return f"{prefix}-{os.getpid()}-{_counter[0]}"


@pytest.fixture(params=["embedded", "device"])
def target(request, tmp_path):
    """A Db or a Device, for tests that hold on both."""
    if request.param == "embedded":
        with cerberus.open(str(tmp_path / "db")) as d:
            yield d
    else:
        address = request.getfixturevalue("device_address")
        with cerberus.connect(address, admin_secret=ADMIN_SECRET) as d:
            yield d
