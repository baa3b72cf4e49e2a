#!/usr/bin/env bash
# Runs a command inside .venv with DDS kept on this machine. Every process
# that touches ROS 2 here goes through this (tests, demo, benchmarks).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
# A domain of our own unless the caller chose one: held with flock on one file
# per id (react_ros/ros/isolation.py takes ids from the same files), so two runs
# at once never share one. fd 9 stays open across exec: the command holds the
# lock until it exits. Ids 1-101 keep Fast DDS's ports below the ephemeral range.
if [[ -z ${ROS_DOMAIN_ID:-} ]]; then
  locks="${TMPDIR:-/tmp}/react_ros_domains"
  mkdir -p "$locks"
  for i in $(seq 0 100); do
    id=$(( ($$ + i) % 101 + 1 ))
    exec 9>>"$locks/$id.lock"
    if flock -n 9; then
      export ROS_DOMAIN_ID=$id REACT_ROS_DOMAIN_HELD=$id
      break
    fi
    exec 9>&-
  done
  if [[ -z ${ROS_DOMAIN_ID:-} ]]; then
    echo "ros_env.sh: every ROS domain id 1-101 is held by another run ($locks)" >&2
    exit 1
  fi
fi
export PATH="$root/.venv/bin:$PATH"
export VIRTUAL_ENV="$root/.venv"
exec "$@"
