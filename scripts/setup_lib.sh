# The set-up's steps, sourced by scripts/setup_env.sh (and test/test_setup_script.py).
# They read the caller's globals: root, venv, cache, work, pyver, RECIPE, began.
# shellcheck shell=bash

say() { echo "react_ros: $*" >&2; }
took() { local s=$(( SECONDS - ${1:-$began} )); printf '%dm%02ds' $((s / 60)) $((s % 60)); }
# run_step TITLE CMD...: CMD in the background, its output in a log; a line every
# TICK_S seconds while it runs (with `step_detail`'s words, if any), its time at the end.
TICK_S=${REACT_ROS_SETUP_TICK_S:-8}  # (SECONDS counts whole seconds: 8 keeps within 10)
step_detail() { :; }
run_step() {
  local title=$1; shift
  local log since=$SECONDS pid rc=0
  log=$(mktemp)
  say "$title ..."
  "$@" >"$log" 2>&1 &
  pid=$!
  local next=$(( SECONDS + TICK_S ))
  while kill -0 "$pid" 2>/dev/null; do
    sleep 0.5
    if (( SECONDS >= next )) && kill -0 "$pid" 2>/dev/null; then
      say "  $title: $(took "$since")$(step_detail)"
      next=$(( SECONDS + TICK_S ))
    fi
  done
  wait "$pid" || rc=$?
  if (( rc != 0 )); then
    grep -v "is ignored" "$log" | tail -50 >&2
    rm -f "$log"
    say "$title failed (exit status $rc)"
    exit "$rc"
  fi
  grep -v "is ignored" "$log" >&2 || true
  rm -f "$log"
  say "$title: done in $(took "$since")"
}

package_key() {  # what the installed files of package $1 depend on
  { cat $(find "$root/interfaces/$1" -type f | sort) "$root/requirements/ros-kilted.txt"
    echo "python $pyver recipe $RECIPE"; } | sha256sum | cut -d' ' -f1
}

build_package() {  # configure, build and install $1 into the venv; cache what it installed
  local pkg=$1 key=$2 dir="$work/$1"
  mkdir -p "$dir"
  cd "$dir"
  PATH="$venv/bin:$PATH" cmake "$root/interfaces/$pkg" -DCMAKE_PREFIX_PATH="$venv" \
      -DCMAKE_INSTALL_PREFIX="$venv" -DPython3_EXECUTABLE="$venv/bin/python" \
      -DBUILD_TESTING=OFF >"$dir/configure.log" 2>&1 \
    || { cat "$dir/configure.log"; return 1; }
  PATH="$venv/bin:$PATH" make -j"$(nproc)" install >"$dir/make.log" 2>&1 \
    || { tail -50 "$dir/make.log"; return 1; }
  [ "$cache" = off ] && return 0
  # the installed files, relative to the venv; the venv's path is put back on unpacking
  sed "s#^$venv/##" install_manifest.txt >"$dir/files"
  mkdir -p "$cache" && printf '%s\n' "$venv" >"$dir/prefix" \
    && tar -C "$venv" -czf "$dir/installed.tgz" -T "$dir/files" \
    && tar -C "$dir" -czf "$cache/$pkg-$key.tgz.partial" prefix files installed.tgz \
    && mv "$cache/$pkg-$key.tgz.partial" "$cache/$pkg-$key.tgz" \
    || say "(could not keep $pkg's build in $cache: it will be built again next time)"
}

unpack_package() {  # what an earlier build of $1 installed, into this venv; false if none
  local pkg=$1 key=$2 dir="$work/$1" old
  [ "$cache" != off ] && [ -f "$cache/$pkg-$key.tgz" ] || return 1
  mkdir -p "$dir"
  tar -C "$dir" -xzf "$cache/$pkg-$key.tgz" && tar -C "$venv" -xzf "$dir/installed.tgz" \
    || return 1
  old=$(cat "$dir/prefix")
  if [ "$old" != "$venv" ]; then  # text files that name the venv it was built in
    (cd "$venv" && xargs -a "$dir/files" -d '\n' grep -lIF "$old" 2>/dev/null || true) \
      | while read -r f; do sed -i "s#$old#$venv#g" "$venv/$f"; done
  fi
}

