#!/usr/bin/env bash
# Installs the Python side's pinned dependencies (tools/requirements.txt: torch and
# lightning-thunder from PyPI, used on the CPU) into a virtual environment, .venv by default
# ($TG_PYENV), and the package thunder_gen (python/) into it. The C++ core needs none of it.
# Reruns are quick: nothing happens while the requirements and the package's install are
# unchanged. uv installs the several-GB torch closure in parallel.
set -euo pipefail
cd "$(dirname "$0")/.."
env_dir=${TG_PYENV:-.venv}
stamp="$env_dir/.requirements.sha256"
# The stamp covers the requirements and how they are installed: bump install_recipe when the
# install below changes, and existing environments go through it again (2: bytecode compiled).
install_recipe=2
want=$({ echo "$install_recipe"; cat tools/requirements.txt; } | sha256sum | cut -d' ' -f1)
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  echo "setup-python: $env_dir is up to date"
else
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
  # Every module compiled to bytecode once, here: where PYTHONDONTWRITEBYTECODE is set (as on the
  # 2-core test machine), each test process importing torch compiled its ~1,900 modules again,
  # 2.5 s of CPU each time (uv installs without bytecode). Existing files are skipped on reruns.
  site=$("$env_dir/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
  "$env_dir/bin/python" -m compileall -q -j 0 "$site" ||
    echo "setup-python: warning: some modules in $site did not compile to bytecode (imported from source)" >&2
  echo "$want" >"$stamp"
  echo "setup-python: installed tools/requirements.txt into $env_dir in $((SECONDS - start)) s"
fi

# thunder_gen, editable: the environment imports this checkout's python/thunder_gen/ itself, so
# a change to the package's code needs no reinstall (the tests always run the code as it is).
# What an editable install does fix is the checkout's path and python/pyproject.toml (name,
# version, dependencies): both are in the stamp, so another checkout sharing the environment
# ($TG_PYENV) or a changed pyproject.toml installs again. --no-deps: its one dependency, torch,
# is pinned above.
package_stamp="$env_dir/.thunder_gen.sha256"
package_want=$({ pwd -P; cat python/pyproject.toml; } | sha256sum | cut -d' ' -f1)
if [[ ! -f "$package_stamp" || "$(cat "$package_stamp")" != "$package_want" ]]; then
  "$env_dir/bin/uv" pip install -q -p "$env_dir/bin/python" --no-deps -e ./python
  echo "$package_want" >"$package_stamp"
  echo "setup-python: installed thunder_gen (python/, editable) into $env_dir"
fi
