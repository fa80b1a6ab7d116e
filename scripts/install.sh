#!/usr/bin/env bash
# Install symphony-mcp and what it needs on Debian/Ubuntu into ./.venv.
#   scripts/install.sh          the server (system packages + the package)
#   scripts/install.sh --dev    also the test and lint tools, Chromium, Node.js for the MCP Inspector test, and
#                               the other MCP clients the compatibility matrix drives (.venv-clients, npm)
set -euo pipefail
cd "$(dirname "$0")/.."

dev=0
[[ "${1:-}" == "--dev" ]] && dev=1

as_root() { if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi; }

packages=(
  xvfb openbox xterm x11-utils xdg-utils fonts-dejavu-core  # virtual display, window manager, basic apps
  python3-tk python3-venv python3-pip                      # Tk for the tests' probe window; venv support
  tesseract-ocr-eng                                        # English data for the Tesseract OCR engine
  bubblewrap                                               # confinement of the code tools (run_code)
  x11vnc novnc websockify                                  # the display's live view in a browser (serve --view)
  python3-gi gir1.2-atspi-2.0 at-spi2-core dbus            # elements: the accessibility tree, read under /usr/bin/python3
)
if [[ $dev -eq 1 ]]; then
  packages+=(chromium python3-doc libreoffice-help-en-us)  # a real browser over real documentation pages; the docs index tests
  packages+=(sudo)  # OSWorld tasks' setup runs `echo password | sudo -S ...` as the task user (symphony-mcp osworld-user)
  # The apps of OSWorld's VM image (bench/osworld: Chromium is presented as google-chrome inside each environment);
  # socat forwards the tasks' DevTools port, ffmpeg is what its media tasks run. About 50 s on a machine of this kind.
  packages+=(libreoffice-writer libreoffice-calc libreoffice-impress libreoffice-gtk3)  # with its GTK 3 plugin: its accessibility tree (the elements tests' Writer) and OSWorld's office tasks
  packages+=(gimp vlc thunderbird ffmpeg)
  packages+=(python3-uno)  # LibreOffice's own Python scripting (UNO): the OSWorld office tasks' scripted solver (testkit/osworld_solvers.py)
  # The state OSWorld's image has that its os tasks read: GNOME's settings through dconf on each environment's session
  # bus (with GNOME Shell's schema for favorite-apps, not the shell), PulseAudio's null sink, Totem as default player.
  packages+=(gsettings-desktop-schemas dconf-gsettings-backend dconf-service gnome-shell-common pulseaudio pulseaudio-utils totem)
  packages+=(gnome-terminal)  # OSWorld's terminal (Ctrl+Alt+T in each environment; its text read through AT-SPI)
  packages+=(iproute2 nftables socat)  # each OSWorld environment's own network: a veth pair to the host, NAT through
  # it, and socat relaying a model endpoint on the host's loopback into the environment (bench/osworld/loopback.py)
  packages+=(fonts-urw-base35 xfonts-base)  # the OCR benchmark's page fonts and X core bitmap terminal fonts
  packages+=(libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1)  # Qt 6 (PySide6, the OCR benchmark's Qt dialogs) loads its X11 platform plugin only with these
  packages+=(gir1.2-gtk-3.0)  # the elements tests' GTK 3 probe window (testkit/apps/gtk_probe.py)
  packages+=(xdotool wmctrl)  # the stand-in OSWorld VM of the remote backend's tests: its input and windows run there
  packages+=(openssh-server python3-xlib)  # the SSH backend's tests: a loopback sshd (started by the test, never the system's) whose user's python3 runs the agent on the tests' Xvfb
  packages+=(vim)  # a terminal application (vim.desktop, Terminal=true): the open_app allow-list test's default for text
  command -v npx >/dev/null || packages+=(nodejs npm)
fi
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
  echo "symphony-mcp needs Python >= 3.11 (found $(python3 --version))" >&2; exit 1; }
[[ -x .venv/bin/python ]] || python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# Everything comes from the locks (scripts/lock.sh): exact versions with their hashes, so this machine gets what CI
# tested. --no-deps: a lock already lists every package, and pyautogui's python3-xlib is left out on purpose
# (locks/overrides.txt).
lock() { .venv/bin/python -m pip install -q --no-deps --require-hashes "${@/#/-r}"; }
if [[ $dev -eq 1 ]]; then
  # The test and lint tools and every OCR engine; torch is its CPU build (no CUDA download). locks/no-deps.txt: MiniWoB++'s
  # task pages and OSWorld's getters and metrics, without their own dependencies (see locks/no-deps.in).
  lock locks/dev.txt locks/no-deps.txt
  .venv/bin/python -m pip install -q --no-deps -e .
else
  lock locks/server.txt
  .venv/bin/python -m pip install -q --no-deps .
fi
if [[ $dev -eq 1 ]]; then
  # Other MCP clients for the compatibility matrix (tests/test_client_matrix.py): the Python SDK 1.x and
  # pydantic-ai in their own venv (this project runs on mcp 2.x), the TypeScript SDK from npm. Each is
  # installed again only when its lock changes (a stamp beside it holds the lock's checksum).
  clients=tests/clients
  stamp=$(sha256sum "$clients/requirements.lock" | cut -d' ' -f1)
  if [[ "$(cat .venv-clients/.installed 2>/dev/null)" != "$stamp" ]]; then
    [[ -x .venv-clients/bin/python ]] || python3 -m venv .venv-clients
    .venv-clients/bin/python -m pip install -q --no-deps --require-hashes -r "$clients/requirements.lock"
    echo "$stamp" > .venv-clients/.installed
  fi
  stamp=$(sha256sum "$clients/ts/package-lock.json" | cut -d' ' -f1)
  if [[ "$(cat "$clients/ts/node_modules/.installed" 2>/dev/null)" != "$stamp" ]]; then
    (cd "$clients/ts" && npm ci --no-audit --no-fund --loglevel=error)
    echo "$stamp" > "$clients/ts/node_modules/.installed"
  fi
fi
echo "installed: $(.venv/bin/symphony-mcp --version)"
