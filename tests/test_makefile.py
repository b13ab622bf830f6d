"""The Makefile's Debian installs (``make tesseract``, ``make chromium``) run against fake
``apt-get``/``dpkg-query``/``sudo`` on the PATH: only missing packages are installed, apt-get
waits for the dpkg lock, and the package index is refreshed only when an install fails."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

FAKES = {
    # Installed packages are listed in $FAKE_INSTALLED; dpkg-query prints dpkg's status line.
    "dpkg-query": """#!/bin/sh
pkg="$3"
for p in $FAKE_INSTALLED; do [ "$p" = "$pkg" ] && { printf 'install ok installed'; exit 0; }; done
echo "dpkg-query: no packages found matching $pkg" >&2; exit 1
""",
    # Each call is logged; the first $FAKE_APT_FAILURES calls fail as a held lock does.
    "apt-get": """#!/bin/sh
echo "apt-get $*" >> "$FAKE_LOG"
n=$(wc -l < "$FAKE_LOG")
[ "$n" -gt "${FAKE_APT_FAILURES:-0}" ] || { echo "E: Could not get lock /var/lib/dpkg/lock-frontend" >&2; exit 100; }
""",
    "sudo": """#!/bin/sh
exec "$@"
""",
}


@pytest.fixture
def fake_apt(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in FAKES.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    log = tmp_path / "apt.log"
    log.touch()

    def make(target: str, installed: str = "", failures: int = 0, **variables: str):
        env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", FAKE_LOG=str(log),
                   FAKE_INSTALLED=installed, FAKE_APT_FAILURES=str(failures))
        args = [f"{key}={value}" for key, value in variables.items()]
        done = subprocess.run(["make", "--no-print-directory", "-C", str(REPO), target, *args],
                              env=env, capture_output=True, text=True, timeout=60)
        return done.returncode, log.read_text().splitlines(), done.stdout

    return make


def test_only_the_missing_package_is_installed_and_apt_waits_for_the_lock(fake_apt):
    code, calls, out = fake_apt("tesseract", installed="tesseract-ocr", TESSERACT="/nonexistent")
    assert code == 0
    assert calls == ["apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends tesseract-ocr-eng"]
    assert "Installing Debian packages: tesseract-ocr-eng (waits up to 600 s for the apt lock)" in out


def test_nothing_is_installed_when_every_package_is(fake_apt):
    code, calls, _ = fake_apt("tesseract", installed="tesseract-ocr tesseract-ocr-eng", TESSERACT="/nonexistent")
    assert (code, calls) == (0, [])


def test_a_present_binary_skips_apt_entirely(fake_apt):
    code, calls, _ = fake_apt("chromium", CHROMIUM="/bin/sh")
    assert (code, calls) == (0, [])


def test_a_failed_install_refreshes_the_index_once_and_retries(fake_apt):
    code, calls, _ = fake_apt("chromium", failures=1, CHROMIUM="/nonexistent", APT_LOCK_TIMEOUT="5")
    assert code == 0
    assert calls == ["apt-get -o DPkg::Lock::Timeout=5 install -y --no-install-recommends chromium",
                     "apt-get -o DPkg::Lock::Timeout=5 update",
                     "apt-get -o DPkg::Lock::Timeout=5 install -y --no-install-recommends chromium"]


def test_an_install_that_keeps_failing_fails_make(fake_apt):
    code, calls, _ = fake_apt("tesseract", failures=2, TESSERACT="/nonexistent")
    assert code == 2
    assert calls == ["apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends tesseract-ocr tesseract-ocr-eng",
                     "apt-get -o DPkg::Lock::Timeout=600 update"]
