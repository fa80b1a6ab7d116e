#!/bin/sh
# The first process of one OSWorld environment (sandbox.py starts it as root under
# `unshare --mount --propagation private --uts --pid --net --fork`): it builds the environment's own root and stays as its
# PID 1. Everything happens in the new mount namespace, so the host sees none of these mounts.
#   $1... folders of the host's /root or /tmp to show read-only (the interpreter, venv and code the server runs with)
# The root is an overlay: the host's / read-only below, a tmpfs above, so any write anywhere (sudo included) lands
# in memory and is gone when PID 1 dies. /proc is the new PID namespace's, /dev a minimal one (no block devices),
# /sys read-only, /tmp private; the old root is unmounted, so nothing of the host is reachable by path.
set -eu
top=/mnt  # hidden by the tmpfs below in this namespace only
mount -t tmpfs -o mode=0700 symphony-environment "$top"
mkdir "$top/upper" "$top/work" "$top/root"
mount -t overlay overlay -o "lowerdir=/,upperdir=$top/upper,workdir=$top/work" "$top/root"
root=$top/root
mount -t proc proc "$root/proc"
# The kernel's host-wide knobs stay read-only, as in a container: sysctls, sysrq (a reboot), IRQs, buses.
for knob in sys sysrq-trigger irq bus fs; do
  [ -e "$root/proc/$knob" ] && mount --bind -o ro "$root/proc/$knob" "$root/proc/$knob"
done
mount --bind -o ro /sys "$root/sys"
mount -t tmpfs -o mode=0755,nosuid symphony-dev "$root/dev"
for node in null zero full random urandom tty; do
  touch "$root/dev/$node"
  mount --bind "/dev/$node" "$root/dev/$node"
done
mkdir "$root/dev/pts" "$root/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts "$root/dev/pts"
ln -s pts/ptmx "$root/dev/ptmx"
mount -t tmpfs -o mode=1777,nosuid,nodev symphony-shm "$root/dev/shm"
mount -t tmpfs -o mode=1777,nosuid,nodev symphony-tmp "$root/tmp"
mkdir -m 1777 "$root/tmp/.X11-unix"  # for the environment's own X server (desktop.py), as the task user
# root's home is not the task's business (OSWorld's user cannot enter it either): an empty one; then what $1...
# name, e.g. a pyenv interpreter or a checkout under /tmp the server runs from.
mount -t tmpfs -o mode=0755,nosuid,nodev symphony-root-home "$root/root"
for shown in "$@"; do
  mkdir -p "$root$shown"
  mount --bind -o ro "$shown" "$root$shown"
done
mkdir "$root/.old-root"
cd "$root"
pivot_root . .old-root
cd /
umount -l /.old-root
rmdir /.old-root
echo ready
# PDEATHSIG again: a change of uid clears the one unshare --kill-child set, and it ends the environment with unshare.
exec setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --bounding-set=-all --pdeathsig=KILL \
  sleep infinity >/dev/null
