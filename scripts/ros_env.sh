#!/usr/bin/env bash
# Runs a command inside .venv with DDS kept on this machine. Every process
# that touches ROS 2 here goes through this (tests, demo, benchmarks).
#
#   scripts/ros_env.sh COMMAND...          a ROS domain of its own (or $ROS_DOMAIN_ID if set)
#   scripts/ros_env.sh --join COMMAND...   the domain of the player running through this
#                                          script (react-ros play/demo, the player node):
#                                          a second terminal that should see it
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
locks="${TMPDIR:-/tmp}/react_ros_domains"
# Each holder writes its command into its lock file (react_ros/ros/isolation.py
# too), so that --join can tell a player's domain from a test run's.
player='(react-ros|react_ros\.cli) (play|demo)|react_ros\.node|react_ros/node'

if [[ ${1:-} == --join ]]; then
  shift
  found=()
  for f in "$locks"/*.lock; do
    [[ -e $f ]] || continue
    grep -Eq "$player" "$f" 2>/dev/null || continue
    flock -n -s "$f" true 2>/dev/null && continue  # nobody holds it: a player that ended
    found+=("$f")
  done
  if (( ${#found[@]} == 0 )); then
    echo "ros_env.sh --join: no player started through scripts/ros_env.sh is running" \
         "(start one: scripts/ros_env.sh react-ros play EPISODE)" >&2
    exit 1
  fi
  if (( ${#found[@]} > 1 )); then
    echo "ros_env.sh --join: ${#found[@]} players are running; pick one's domain" \
         "with ROS_DOMAIN_ID=N scripts/ros_env.sh ...:" >&2
    for f in "${found[@]}"; do
      echo "  ROS_DOMAIN_ID=$(basename "$f" .lock): $(head -c 200 "$f" | head -n 1)" >&2
    done
    exit 1
  fi
  export ROS_DOMAIN_ID=$(basename "${found[0]}" .lock)
  unset REACT_ROS_DOMAIN_HELD  # joined, not held: a test run started so takes its own
fi

# A domain of our own unless the caller chose one: held with flock on one file
# per id (react_ros/ros/isolation.py takes ids from the same files), so two runs
# at once never share one. fd 9 stays open across exec: the command holds the
# lock until it exits. Ids 1-101 keep Fast DDS's ports below the ephemeral range.
if [[ -z ${ROS_DOMAIN_ID:-} ]]; then
  mkdir -p "$locks"
  for i in $(seq 0 100); do
    id=$(( ($$ + i) % 101 + 1 ))
    exec 9>>"$locks/$id.lock"
    if flock -n 9; then
      export ROS_DOMAIN_ID=$id REACT_ROS_DOMAIN_HELD=$id
      printf '%s\n' "$*" >"$locks/$id.lock"  # the holder's command, for --join
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
