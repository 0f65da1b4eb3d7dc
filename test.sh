#!/usr/bin/env bash
# Runs the whole ovssim test suite (sets up .venv first if needed).
set -euo pipefail
cd "$(dirname "$0")"
./setup.sh --no-example
exec .venv/bin/python -m pytest -q "$@"
