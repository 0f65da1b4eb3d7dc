#!/usr/bin/env bash
# Sets up ovssim on a fresh Debian/Ubuntu machine, then runs the bundled example.
# As root it also installs the system packages the collector needs; as a user it installs the Python
# package alone (all a simulation needs) and names the missing packages.
#   ./setup.sh              system packages + .venv + the example scenario
#   ./setup.sh --no-example system packages + .venv only (used by ./test.sh)
# Idempotent: a second run installs nothing that is already there.
set -euo pipefail
cd "$(dirname "$0")"
run_example=1
[[ "${1:-}" == "--no-example" ]] && run_example=0

SYSTEM_PACKAGES=(openvswitch-switch iperf3 iperf sockperf qperf ethtool iproute2 iputils-ping procps)
# netperf is not in Debian main; the collector uses it when a netperf binary is present.

need_apt=()
for pkg in "${SYSTEM_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need_apt+=("$pkg")
done
if (( ${#need_apt[@]} )); then
  if [[ $(id -u) -ne 0 ]]; then
    # simulating needs none of them: install the Python package anyway and say what collecting needs
    echo "setup.sh: note: 'ovssim collect' and 'ovssim testbed' need system packages that are missing" \
         "(${need_apt[*]}); run sudo ./setup.sh to install them. Simulating, fitting and validating work without." >&2
  else
    echo "setup.sh: installing system packages: ${need_apt[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
  fi
fi

PY=${PYTHON:-python3}
if [[ ! -x .venv/bin/python ]]; then
  echo "setup.sh: creating .venv"
  "$PY" -m venv .venv
fi
stamp=.venv/.ovssim-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [[ ! -f $stamp || "$(cat "$stamp")" != "$want" ]]; then
  echo "setup.sh: installing ovssim and its dependencies into .venv"
  log=.venv/pip-install.log
  if ! { .venv/bin/python -m pip install -q --upgrade pip && .venv/bin/python -m pip install -q -e '.[dev]'; } >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    echo "setup.sh: pip could not install ovssim's Python dependencies (full log: $log); check the network/package index and run ./setup.sh again." >&2
    exit 1
  fi
  echo "$want" > "$stamp"
fi

if (( run_example )); then
  echo "setup.sh: running the bundled example: examples/thesis_kvm_ovs.toml"
  .venv/bin/ovssim run examples/thesis_kvm_ovs.toml
fi
