#!/usr/bin/env bash
# Run `ansible-test sanity` on a staged copy of the tracked files.
#
# ansible-test wants the collection under .../ansible_collections/<ns>/<name>
# and bootstraps pip in its per-test virtualenvs from a host this network does
# not reach; a stand-in that runs the interpreter's own ensurepip lets it go on
# (see ../shared/design/tooling.md). No ignore files: findings get fixed.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
venv=${VENV:-$repo/.venv}
stage=${STAGE:-$repo/.cache/sanity}
python_version=$("$venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
# ansible-test looks for python<version> on PATH; the venv's own comes first (a pyenv shim of a Python pyenv has not
# activated would fail), and so do its ansible tools.
export PATH="$venv/bin:$PATH"

# The shellcheck sanity test is skipped silently when the program is absent.
if ! command -v shellcheck >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq shellcheck >/dev/null
  else
    echo "shellcheck is missing: install it (apt-get install shellcheck) so the shellcheck sanity test runs" >&2
    exit 1
  fi
fi

cache=$HOME/.ansible/test/cache
mkdir -p "$cache"
# The pip versions this ansible-test bootstraps (python_requirements.py pins them), plus those of earlier releases.
pinned_pips=$(sed -n "s/^ *pip='\([0-9.]*\)',$/\1/p" "$venv"/lib/python3*/site-packages/ansible_test/_internal/python_requirements.py)
for version in 24.2 25.0 25.1 25.2 25.3 $pinned_pips; do
  stand_in=$cache/get_pip_${version//./_}.py
  [ -f "$stand_in" ] || printf 'import ensurepip, sys\nsys.exit(ensurepip._main(["--upgrade", "--default-pip"]) or 0)\n' > "$stand_in"
done

target=$stage/ansible_collections/fleetops/registration
rm -rf "$stage"
mkdir -p "$target"
(cd "$repo" && git ls-files -co --exclude-standard -z | xargs -0 -I{} sh -c 'test -e "{}" && printf "%s\0" "{}"' | tar --null -cf - -T -) | tar -xf - -C "$target"
cd "$target"
git init -q . && git add -A >/dev/null
exec "$venv/bin/ansible-test" sanity --venv --python "$python_version" --color no "$@"
