#!/usr/bin/env bash
# Compile the locks from their inputs: every package, transitive ones included, pinned with its hashes.
#   locks/server.txt           pyproject.toml (the server)
#   locks/dev.txt              pyproject.toml [dev,easyocr,osworld], CPU torch (scripts/constraints-cpu.txt), at
#                              the server lock's versions
#   locks/no-deps.txt          locks/no-deps.in (installed without their own dependencies)
#   tests/clients/requirements.lock   tests/clients/requirements.txt (the client-matrix venv, .venv-clients)
# scripts/install.sh and CI install only from them, so a fresh machine gets exactly what was tested. Versions
# already in a lock are kept unless asked otherwise: run this after changing a dependency (only what the change
# needs moves), or with --upgrade / --upgrade-package NAME to take newer releases; then install into a fresh venv,
# run the tests, and commit the locks with the change.
#   scripts/lock.sh [extra uv pip compile options]
# Needs uv (in the dev lock: .venv/bin/uv). torch is the CPU build: its wheel is found in $TORCH_FIND_LINKS (this
# machine's /opt/wheels by default; https://download.pytorch.org/whl/cpu/torch/ elsewhere).
set -euo pipefail
cd "$(dirname "$0")/.."
uv=${UV:-.venv/bin/uv}
[[ -x $uv ]] || uv=$(command -v uv) || { echo "scripts/lock.sh needs uv: pip install uv" >&2; exit 1; }
compile() {
  "$uv" pip compile --generate-hashes --python-version 3.11 --python-platform x86_64-manylinux_2_28 \
    --overrides locks/overrides.txt --custom-compile-command scripts/lock.sh --quiet "$@"
}
compile pyproject.toml -o locks/server.txt "$@"
compile pyproject.toml --extra dev --extra easyocr --extra osworld -c scripts/constraints-cpu.txt -c locks/server.txt \
  --find-links "${TORCH_FIND_LINKS:-/opt/wheels}" -o locks/dev.txt "$@"
compile locks/no-deps.in --no-deps -o locks/no-deps.txt "$@"
compile tests/clients/requirements.txt -o tests/clients/requirements.lock "$@"
for lock in locks/server.txt locks/dev.txt locks/no-deps.txt tests/clients/requirements.lock; do
  echo "$lock: $(grep -c '==' "$lock") packages"
done
