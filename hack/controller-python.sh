#!/usr/bin/env bash
# Print the path of a Python for the Ansible controller: hack/controller-python.sh MIN MAX newest|oldest
#   the newest (or oldest) Python 3.x with MIN <= 3.x <= MAX that runs, found as python3.x on PATH, as python3, or
#   under pyenv ($PYENV_ROOT/versions/3.x.*, latest patch first), whether or not pyenv has it activated (a pyenv
#   shim of an inactive version fails to run and is passed over). PYTHON=<path> in the environment wins if it fits.
# ansible-core 2.20 and later need Python 3.12 or newer on the controller; the image's default python3 is 3.11.
set -euo pipefail

min=${1:?usage: controller-python.sh MIN MAX newest|oldest}
max=${2:?usage: controller-python.sh MIN MAX newest|oldest}
order=${3:-newest}
pyenv_root=${PYENV_ROOT:-$HOME/.pyenv}

minor() { echo "${1#3.}"; }

# "<minor> <path>" of an interpreter that runs and is within [min, max], else nothing.
probe() {
  local found
  found=$("$1" -c 'import sys; print(sys.version_info[1], sys.executable)' 2>/dev/null) || return 0
  [ "${found%% *}" -ge "$(minor "$min")" ] && [ "${found%% *}" -le "$(minor "$max")" ] && echo "$found"
  return 0
}

if [ -n "${PYTHON:-}" ]; then
  chosen=$(probe "$PYTHON")
  if [ -z "$chosen" ]; then
    echo "PYTHON=$PYTHON is not a Python $min to $max; unset it to let the Makefile choose, or name another" >&2
    exit 1
  fi
  echo "${chosen#* }"
  exit 0
fi

candidates=()
for ((m = $(minor "$max"); m >= $(minor "$min"); m--)); do
  candidates+=("python3.$m")
  while read -r dir; do
    [ -n "$dir" ] && candidates+=("$dir/bin/python3.$m")
  done < <(find "$pyenv_root/versions" -mindepth 1 -maxdepth 1 -name "3.$m.*" 2>/dev/null | sort -rV)
done
candidates+=(python3)

found=$(for candidate in "${candidates[@]}"; do probe "$candidate"; done | sort -n -s -k1,1 | uniq)
if [ -z "$found" ]; then
  echo "No Python $min to $max found (as python3.N on PATH, python3, or under $pyenv_root/versions): ansible-core needs" \
       "it on the controller. Install one (e.g. 'pyenv install 3.13' or your distribution's python3.13), or name it with" \
       "PYTHON=/path/to/python3.N" >&2
  exit 1
fi
if [ "$order" = oldest ]; then
  line=$(echo "$found" | head -1)
else
  # the newest minor; among several of that minor, the first found (PATH before pyenv, latest patch first)
  newest=$(echo "$found" | tail -1 | cut -d' ' -f1)
  line=$(echo "$found" | awk -v m="$newest" '$1 == m' | head -1)
fi
echo "${line#* }"
