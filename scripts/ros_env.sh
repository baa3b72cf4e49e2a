#!/usr/bin/env bash
# Runs a command inside .venv with DDS kept on this machine. Every process
# that touches ROS 2 here goes through this (tests, demo, benchmarks).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
# A domain of our own per run unless the caller chose one; stay below ~100 so
# DDS ports stay out of Linux's ephemeral range.
export ROS_DOMAIN_ID=${ROS_DOMAIN_ID:-$(( ($$ % 80) + 10 ))}
export PATH="$root/.venv/bin:$PATH"
export VIRTUAL_ENV="$root/.venv"
exec "$@"
