"""The production settings the README documents pass Django's deployment checklist."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_check_deploy_passes_with_the_documented_production_settings(tmp_path):
    env = {
        **{k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"},
        "DEBUG": "false",
        "SECRET_KEY": "k" * 20 + "-production-secret-" + "x7Qz" * 8,
        "ALLOWED_HOSTS": "engram.example.com",
        "BEHIND_PROXY": "true",
        "SECURE_HSTS_PRELOAD": "true",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'deploy.sqlite3'}",
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
