#!/usr/bin/env bash
# Installs the Python side's pinned dependencies (tools/requirements.txt: torch and
# lightning-thunder from PyPI, used on the CPU) into a virtual environment, .venv by default
# ($TG_PYENV). The C++ core needs none of it. Reruns are quick: nothing happens while the
# requirements are unchanged. uv installs the several-GB torch closure in parallel.
set -euo pipefail
cd "$(dirname "$0")/.."
env_dir=${TG_PYENV:-.venv}
stamp="$env_dir/.requirements.sha256"
want=$(sha256sum tools/requirements.txt | cut -d' ' -f1)
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  echo "setup-python: $env_dir is up to date"
  exit 0
fi
python=${PYTHON:-python3}
"$python" -c 'import sys; assert (3, 10) <= sys.version_info[:2] <= (3, 13), sys.version' ||
  { echo "setup-python: lightning-thunder 0.2.6 needs Python 3.10 to 3.13" >&2; exit 1; }
if [[ ! -x "$env_dir/bin/python" ]]; then
  "$python" -m venv "$env_dir" || {
    echo "setup-python: '$python -m venv' failed; on Debian, apt-get install python3-venv" >&2; exit 1; }
fi
"$env_dir/bin/python" -m pip install -q --disable-pip-version-check uv==0.13.9
start=$SECONDS
"$env_dir/bin/uv" pip install -q -p "$env_dir/bin/python" -r tools/requirements.txt
echo "$want" >"$stamp"
echo "setup-python: installed tools/requirements.txt into $env_dir in $((SECONDS - start)) s"
