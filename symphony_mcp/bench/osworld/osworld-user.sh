#!/usr/bin/env bash
# The account OSWorld's tasks assume: user `user`, password `password`, a home with the usual folders
# (Desktop, Documents, Downloads, ...), in group `sudo` when that group exists (the tasks' setup runs
# `echo password | sudo -S ...`). Shipped in the package; run as root through the console script:
#   symphony-mcp osworld-user create   create it and record what was created
#   symphony-mcp osworld-user remove   undo exactly what `create` recorded (the account, its home, the record)
#   symphony-mcp osworld-user status   say whether it exists and whether this script created it
# Only for disposable machines, CI and test VMs: the password is public and, with sudo installed, the
# account can become root. An existing `user` that this script did not create is never changed or removed.
set -euo pipefail
name=${OSWORLD_USER:-user}
password=${OSWORLD_PASSWORD:-password}
record=${OSWORLD_USER_RECORD:-/var/lib/symphony-mcp/osworld-user.created}
folders=(Desktop Documents Downloads Music Pictures Public Templates Videos)

need_root() { [[ $(id -u) -eq 0 ]] || { echo "run as root (e.g. sudo symphony-mcp osworld-user $1)" >&2; exit 1; }; }

case "${1:-}" in
  create)
    need_root create
    if id -u "$name" >/dev/null 2>&1; then
      if [[ -f $record ]] && grep -qx "user=$name" "$record"; then echo "$name exists (created by this script)"; exit 0; fi
      echo "an account '$name' exists and was not created by this script; leaving it alone" >&2; exit 1
    fi
    mkdir -p "$(dirname "$record")"
    groups=()
    getent group sudo >/dev/null && groups=(-G sudo)
    useradd --create-home --shell /bin/bash --comment "OSWorld task user (symphony-mcp)" "${groups[@]}" "$name"
    echo "$name:$password" | chpasswd
    home=$(getent passwd "$name" | cut -d: -f6)
    for folder in "${folders[@]}"; do install -d -o "$name" -g "$name" "$home/$folder"; done
    { echo "user=$name"; echo "home=$home"; [[ ${#groups[@]} -gt 0 ]] && echo "groups=sudo"; } > "$record"
    echo "created $name (home $home${groups[*]:+, group sudo}); undo with: $0 remove"
    ;;
  remove)
    need_root remove
    if [[ ! -f $record ]] || ! grep -qx "user=$name" "$record"; then
      echo "nothing recorded for '$name' in $record: this script did not create it, so it is left alone" >&2; exit 1
    fi
    home=$(sed -n 's/^home=//p' "$record")
    if id -u "$name" >/dev/null 2>&1; then
      if pgrep -u "$name" >/dev/null; then
        echo "'$name' still has processes (pgrep -u $name): end them first" >&2; exit 1
      fi
      userdel "$name"
    fi
    [[ -n $home && -d $home ]] && rm -rf --one-file-system -- "$home"
    rm -f -- "$record"
    echo "removed $name and $home"
    ;;
  status)
    if id -u "$name" >/dev/null 2>&1; then
      if [[ -f $record ]] && grep -qx "user=$name" "$record"; then echo "$name exists (created by this script)"
      else echo "$name exists (not created by this script)"; fi
    else echo "$name does not exist"; fi
    ;;
  *) echo "usage: $0 create|remove|status" >&2; exit 2 ;;
esac
