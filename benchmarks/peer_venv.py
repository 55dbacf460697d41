"""The peer's virtualenv and our driver in it, for `manage.py bench_peer`.

CortexGraph never runs in Engram's process: ensure_peer_venv creates (or reuses) a
virtualenv with the pinned packages, and run_driver runs one job through
benchmarks/peer_driver/cortexgraph_driver.py there, job and answer as JSON files, in a
work directory that also holds the peer's store and config (driver_env).
"""

from __future__ import annotations

import collections
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

PEER_NAME = "CortexGraph"
PEER_VERSION = "1.2.1"
# cortexgraph 1.2.1 asks for mcp>=1.2.0 without an upper bound, but imports
# mcp.server.fastmcp, which mcp 2.x removed: without the pin it does not import.
PEER_REQUIREMENTS = (f"cortexgraph=={PEER_VERSION}", "mcp<2")
DRIVER = Path(__file__).resolve().parent / "peer_driver" / "cortexgraph_driver.py"
Progress = Callable[[str], None]


def _peer_versions(python: Path) -> dict[str, str] | None:
    """Installed cortexgraph and mcp versions in a venv, or None when missing."""
    probe = (
        "import json; from importlib.metadata import version as v; "
        "print(json.dumps({'cortexgraph': v('cortexgraph'), 'mcp': v('mcp')}))"
    )
    try:
        done = subprocess.run(
            [str(python), "-c", probe], capture_output=True, text=True, timeout=60, check=False
        )
    except OSError:
        return None
    if done.returncode != 0:
        return None
    return json.loads(done.stdout)


def _usable(versions: dict[str, str] | None) -> bool:
    return bool(
        versions
        and versions.get("cortexgraph") == PEER_VERSION
        and versions.get("mcp", "2").split(".")[0] in {"0", "1"}
    )


def ensure_peer_venv(venv: Path, progress: Progress) -> Path:
    """The peer venv's python: reused when it has the pinned packages, else created.

    `python3.11 -m venv` then pip install of PEER_REQUIREMENTS from the configured
    package index; nothing else is fetched.
    """
    python = venv / "bin" / "python"
    if python.exists() and _usable(_peer_versions(python)):
        return python
    if not python.exists():
        base = shutil.which("python3.11") or sys.executable
        progress(f"  peer: creating {venv} with {base} -m venv ...")
        subprocess.run([base, "-m", "venv", str(venv)], check=True)
    progress(f"  peer: pip install {' '.join(PEER_REQUIREMENTS)} ...")
    subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "-qq",
            "--disable-pip-version-check",
            *PEER_REQUIREMENTS,
        ],
        check=True,
    )
    versions = _peer_versions(python)
    if not _usable(versions):
        raise RuntimeError(f"{venv}: expected cortexgraph {PEER_VERSION} and mcp<2, got {versions}")
    return python


def driver_env(workdir: Path) -> dict[str, str]:
    """A small environment that keeps CortexGraph's store and config inside workdir."""
    config = workdir / "config"
    (config / "cortexgraph").mkdir(parents=True, exist_ok=True)
    # An empty .env: its absence only prints a warning; defaults apply either way.
    (config / "cortexgraph" / ".env").write_text("# bench_peer: CortexGraph defaults\n")
    (workdir / "home").mkdir(exist_ok=True)
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "HOME": str(workdir / "home"),
        "XDG_CONFIG_HOME": str(config),
        "CORTEXGRAPH_STORAGE_PATH": str(workdir / "store"),
        "CORTEXGRAPH_ENABLE_EMBEDDINGS": "false",
        "GIT_AUTO_COMMIT": "false",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def run_driver(python: Path, job: dict[str, Any], workdir: Path, progress: Progress) -> dict:
    """Run one job through the driver in a fresh work directory; its JSON answer."""
    workdir.mkdir(parents=True, exist_ok=True)
    job_file, result_file = workdir / "job.json", workdir / "result.json"
    job_file.write_text(json.dumps(job))
    process = subprocess.Popen(
        [str(python), str(DRIVER), str(job_file), str(result_file)],
        cwd=workdir,  # CortexGraph also reads ./.env
        env=driver_env(workdir),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    tail: collections.deque[str] = collections.deque(maxlen=20)
    assert process.stderr is not None
    for line in process.stderr:
        tail.append(line.rstrip())
        progress(tail[-1])
    if process.wait() != 0:
        raise RuntimeError(f"the {PEER_NAME} driver failed:\n" + "\n".join(tail))
    return json.loads(result_file.read_text())
