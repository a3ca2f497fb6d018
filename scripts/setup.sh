#!/usr/bin/env bash
# Installs everything ollie needs to build, run and test on Debian 12:
# Debian packages (compiler, CMake, libraries) and pinned PyPI packages in .venv.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  g++ cmake ninja-build pkg-config git
  clang-format                      # the formatting check (scripts/check_format.sh)
  clang libclang-rt-14-dev          # libFuzzer for the parser fuzz target
  libcli11-dev nlohmann-json3-dev libfmt-dev
  libzip-dev zlib1g-dev             # .npz files are zip archives
  libseccomp-dev                    # the runner's system-call filter
  bubblewrap                        # the sandbox candidate code compiles and runs in (namespaces)
  libssl-dev                        # SHA-256 for the build cache
  libsqlite3-dev                    # the run database
  libpq-dev                         # a run in PostgreSQL, shared by many workers (docs/distributed.md)
  postgresql                        # the server the PostgreSQL tests start (as the postgres user)
  slurm-wlm                         # the one-node Slurm cluster the launch recipe's test starts
  libcurl4-openssl-dev              # language-model clients (HTTPS)
  libcpp-httplib-dev                # `ollie serve`'s live page; the tests' loopback model server
  libgtest-dev libgmock-dev
  python3 python3-venv
  python3-dev                       # headers for the Python package's extension module
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  # (postgresql's own cluster, if the package makes one, is not used: the tests start a
  # server of their own in a temporary directory, tests/store/pg_server.h.)
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

# Headless Chromium for the report's real-browser test (tests/python/test_report_browser.py;
# as root it runs with --no-sandbox). Without its recommends (udev, avahi, printing, ...):
# its dependencies hold all it needs to render headless, fonts included.
if ! dpkg -s chromium >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  [ ${#missing[@]} -gt 0 ] || $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium
fi

# Python is only for tests and benchmarks (numpy as the second oracle).
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -r requirements.txt
