"""The README's Python quick start, as written: its snippets are read from README.md and run
twice (a second run must open what the first made) in a fresh working directory laid out as
the device's: `cerberus-data/admin.secret` holds the suite device's admin secret and
CERBERUS_DEVICE names its address."""

import os
import re
import stat
import subprocess
import sys

from conftest import ADMIN_SECRET, ROOT


def readme_snippets(heading: str) -> list:
    text = (ROOT / "README.md").read_text()
    section = text.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^```python\n(.*?)^```$", section, flags=re.S | re.M)


def test_python_quick_start_runs_twice(tmp_path, device_address):
    snippets = readme_snippets("## Quick start (Python)")
    assert snippets, "no Python snippet under the heading"
    (tmp_path / "cerberus-data").mkdir()
    (tmp_path / "cerberus-data" / "admin.secret").write_text(ADMIN_SECRET + "\n")
    env = dict(os.environ, CERBERUS_DEVICE=device_address)
    outputs = []
    for run in range(2):
        for snippet in snippets:
            p = subprocess.run([sys.executable, "-c", snippet], cwd=tmp_path, env=env,
                               capture_output=True, text=True, timeout=120)
            assert p.returncode == 0, f"run {run + 1}:\n{p.stderr}"
            outputs.append(p.stdout)
    # Each run stored the same keys again: the same answers.
    assert outputs[0] == outputs[1]
    assert "b'user:1'" in outputs[0] and "'stars': 4" in outputs[0]
    assert stat.S_IMODE((tmp_path / "py-demo.secret").stat().st_mode) == 0o600
    assert (tmp_path / "demo-db").is_dir()
