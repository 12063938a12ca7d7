#!/bin/bash
# systemd-sandbox.sh start SCRATCH MOUNT_ROOT   -> prints the D-Bus address of the sandbox's system bus
# systemd-sandbox.sh stop  SCRATCH              -> stops it and restores the host (idempotent)
#
# A real systemd manager for the mounter's tests on a machine whose PID 1 is not systemd. systemd runs
# as PID 1 of new PID/mount/UTS namespaces, with its own dbus-daemon; units it starts may mount at or
# below MOUNT_ROOT and those mounts (only those) propagate to the host. Everything else it mounts stays
# inside. The things this protects, and why each step exists:
#  - cgroups: systemd must never see the host's cgroup root (it would move every process into
#    init.scope) nor the host's /sys/fs/cgroup tmpfs (on a hybrid host it remounts it read-only, and that
#    superblock is shared). It gets a private cgroup2 mount and a subtree of its own.
#  - mounts: every mount except MOUNT_ROOT is made private inside before anything is mounted; MOUNT_ROOT
#    is a self-bind in a peer group of its own, shared with the namespace's copy.
#  - /run (the "booted with systemd" marker), sysctls (read-only /proc/sys), stock units (only our unit
#    directory, no generators), the hostname (UTS namespace), other processes (PID namespace).
# Needs root, util-linux (unshare, setpriv, mountpoint), bsdutils (script), procps (pgrep), systemd, dbus.
set -uo pipefail

SELF=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/$(basename "${BASH_SOURCE[0]}")
fail() { echo "systemd-sandbox: $*" >&2; exit 1; }
# mountinfo writes blanks and backslashes as \NNN octal
unescape() { printf '%b' "$(printf %s "$1" | sed 's/\\\([0-7]\{3\}\)/\\0\1/g')"; }
# alive = exists and is not a zombie (a reparented `script` may be reaped late)
alive() { local s; s=$(awk '/^State:/ {print $2}' "/proc/$1/status" 2>/dev/null); [ -n "$s" ] && [ "$s" != Z ]; }
shared_outside() {
  awk -v m="$1" '$5 != m && index($5, m "/") != 1 { for (i = 7; $i != "-"; i++) if ($i ~ /^shared:/) { print $5; break } }' /proc/self/mountinfo
}

inner() {
  # (runs as PID 1 of the new namespaces; inputs S, M, CG, LEVEL from the environment)
  local mp
  while IFS= read -r mp; do
    case "$mp" in "$M" | "$M"/*) continue ;; esac
    case "$M/" in
      "${mp%/}/"*) mount --make-private "$(unescape "$mp")" ;;   # ancestors of M: not recursive, M stays shared
      *) mount --make-rprivate "$(unescape "$mp")" ;;           # recursive: reaches over-mounted mounts too
    esac
  done < <(awk '{ print $5 }' /proc/self/mountinfo | sort -u)
  [ -z "$(shared_outside "$M")" ] || fail "inner: mounts still shared with the host: $(shared_outside "$M")"
  awk -v m="$M" '$5 == m && / shared:[0-9]+ / { ok = 1 } END { exit !ok }' /proc/self/mountinfo || fail "inner: $M is not shared"

  mount -t cgroup2 cgroup2 /sys/fs/cgroup && mount --make-private /sys/fs/cgroup
  mkdir -p "/sys/fs/cgroup/$CG" && echo $$ > "/sys/fs/cgroup/$CG/cgroup.procs"
  mount --bind /proc/sys /proc/sys && mount -o remount,bind,ro /proc/sys && mount --make-private /proc/sys
  mount --bind "$S/run" /run && mount --make-private /run
  mount --bind "$(tty)" /dev/console && mount --make-private /dev/console   # systemd logs only to a tty
  [ -z "$(shared_outside "$M")" ] || fail "inner: shared mounts after setup: $(shared_outside "$M")"

  exec env -i container=storctl-test PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    SYSTEMD_UNIT_PATH="$S/units" SYSTEMD_GENERATOR_PATH="$S/empty" SYSTEMD_ENVIRONMENT_GENERATOR_PATH="$S/empty" \
    setpriv --bounding-set -sys_module,-sys_time \
    /lib/systemd/systemd --log-level="$LEVEL" --log-target=console --show-status=no --unit=sandbox.target
}

write_units() {
  local U=$1 u
  printf '[Unit]\nDescription=storctl test sandbox\nWants=dbus.socket dbus.service\n' > "$U/sandbox.target"
  printf '[Unit]\nDescription=system bus socket\nDefaultDependencies=no\n[Socket]\nListenStream=/run/dbus/system_bus_socket\n' > "$U/dbus.socket"
  cat > "$U/dbus.service" <<'UNIT'
[Unit]
Description=system bus
DefaultDependencies=no
Requires=dbus.socket
After=dbus.socket
[Service]
Type=notify
NotifyAccess=main
ExecStart=/usr/bin/dbus-daemon --system --address=systemd: --nofork --nopidfile --systemd-activation --syslog-only
UNIT
  # targets and the slice transient services depend on by default
  for u in sysinit.target basic.target sockets.target shutdown.target exit.target system.slice; do
    printf '[Unit]\nDescription=%s\nDefaultDependencies=no\n' "$u" > "$U/$u"
  done
}

do_start() {
  local S M
  S=$(realpath -m -- "$1"); M=$(realpath -m -- "$2")
  for p in "$S" "$M"; do
    [ "$p" != / ] || fail "'/' is not allowed"
    case "$p" in *[[:space:]\\]*) fail "paths with blanks or backslashes are not supported: $p" ;; esac
  done
  case "$M/" in "$S/") fail "MOUNT_ROOT must differ from SCRATCH" ;; "$S/run/"*) fail "MOUNT_ROOT must not be under SCRATCH/run" ;; esac
  case "$S/" in "$M/"*) fail "SCRATCH must not be inside MOUNT_ROOT" ;; esac
  [ ! -e "$S/state" ] || fail "state left in $S/state (running, or not stopped): run stop first"
  mountpoint -q "$M" 2>/dev/null && fail "$M is already a mount point"
  awk -v m="$M" 'index($5, m "/") == 1 { f = 1 } END { exit !f }' /proc/self/mountinfo && fail "something is mounted below $M"

  local CG=storctl-sandbox-$(printf %s "$S" | md5sum | cut -c1-8)
  mkdir -p "$S" "$M"
  trap 'if [ $? -ne 0 ]; then echo "systemd-sandbox: start failed, cleaning up" >&2; "$SELF" stop "$S" >&2; fi' EXIT
  rm -rf "$S/run" "$S/units" "$S/empty"
  mkdir -p "$S/run" "$S/units" "$S/empty" "$S/state"
  echo "$M" > "$S/state/mount_root"
  echo "$CG" > "$S/state/cgroup"
  write_units "$S/units"

  # MOUNT_ROOT: a self-bind in a new peer group (private first, so it leaves the group of its parent), then shared.
  mount --bind "$M" "$M" && mount --make-private "$M" && mount --make-shared "$M"

  export S M CG LEVEL=${SANDBOX_LOG_LEVEL:-info}
  # setsid: no terminal signals; script: a pty for the console; unshare --propagation unchanged keeps M a peer.
  local cmd="unshare --pid --fork --mount --mount-proc --uts --propagation unchanged -- $(printf %q "$SELF") inner"
  SHELL=/bin/bash setsid /bin/bash -c 'exec script -qfec "$1" "$2"' bash "$cmd" "$S/console.log" > "$S/start.out" 2>&1 < /dev/null &
  local W=$!
  echo "$W" > "$S/state/script.pid"

  local BUS="unix:path=$S/run/dbus/system_bus_socket" deadline=$(( $(date +%s) + ${SANDBOX_TIMEOUT:-20} ))
  # ready = systemd answers on the bus (a socket file may be a stale leftover)
  until busctl --address="$BUS" status org.freedesktop.systemd1 > /dev/null 2>&1; do
    if ! alive "$W" || [ "$(date +%s)" -ge "$deadline" ]; then
      tail -n 20 "$S/console.log" "$S/start.out" >&2 2>/dev/null
      fail "systemd did not come up"
    fi
    sleep 0.02
  done
  local P1="" c g
  for c in $(pgrep -P "$W"); do
    for g in $(pgrep -P "$c"); do
      awk '/^NSpid:/ { exit !(NF == 3 && $3 == 1) }' "/proc/$g/status" 2>/dev/null && P1=$g
    done
  done
  [ -n "$P1" ] || fail "cannot find the host PID of the sandbox's PID 1"
  echo "$P1" > "$S/state/pid1.pid"
  trap - EXIT
  echo "$BUS"
}

do_stop() {
  local S; S=$(realpath -m -- "$1")
  [ -d "$S/state" ] || { echo "systemd-sandbox: nothing to stop" >&2; return 0; }
  local M CG W P1 BUS="unix:path=$S/run/dbus/system_bus_socket"
  M=$(cat "$S/state/mount_root" 2>/dev/null); CG=$(cat "$S/state/cgroup" 2>/dev/null)
  W=$(cat "$S/state/script.pid" 2>/dev/null); P1=$(cat "$S/state/pid1.pid" 2>/dev/null)
  # only signal PIDs that are still the processes we started (PID reuse)
  is_script() { [ -n "$W" ] && alive "$W" && tr '\0' ' ' < "/proc/$W/cmdline" 2>/dev/null | grep -qF "$S/console.log"; }
  is_pid1() { [ -n "$P1" ] && [ -n "$CG" ] && alive "$P1" && awk '/^NSpid:/ { exit !(NF == 3 && $3 == 1) }' "/proc/$P1/status" 2>/dev/null \
    && grep -qE "^0::/$CG(/|\$)" "/proc/$P1/cgroup" 2>/dev/null; }
  wait_gone() { local i; for i in $(seq 1 "$2"); do alive "$1" || return 0; sleep 0.02; done; return 1; }

  if is_script || is_pid1; then
    # Manager.Exit(): in a container systemd stops its units and PID 1 exits
    timeout 5 busctl --address="$BUS" call org.freedesktop.systemd1 /org/freedesktop/systemd1 org.freedesktop.systemd1.Manager Exit > /dev/null 2>&1 \
      && [ -n "$P1" ] && wait_gone "$P1" 500
    if is_pid1; then kill -KILL "$P1"; wait_gone "$P1" 250; fi    # kills the whole PID namespace
    if is_script && ! wait_gone "$W" 250; then kill -KILL "$W"; wait_gone "$W" 100; fi
  fi
  # leftovers at/below MOUNT_ROOT (dead FUSE mounts...), deepest first, then MOUNT_ROOT's self-bind
  if [ -n "$M" ]; then
    local mp i
    for i in $(seq 1 200); do
      mp=$(awk -v m="$M" '$5 == m || index($5, m "/") == 1 { print length($5) " " $5 }' /proc/self/mountinfo | sort -rn | head -n1 | cut -d' ' -f2-)
      [ -n "$mp" ] || break
      mp=$(unescape "$mp")
      umount "$mp" 2> /dev/null || umount -l "$mp" || { echo "systemd-sandbox: cannot unmount $mp" >&2; break; }
    done
  fi
  # the cgroup subtree, seen through a throw-away cgroup2 mount (works wherever the host mounts cgroup2)
  if [ -n "$CG" ]; then
    unshare --mount --propagation private -- /bin/bash -c '
      mount -t cgroup2 cgroup2 /sys/fs/cgroup || exit 1
      d=/sys/fs/cgroup/$1; [ -d "$d" ] || exit 0
      for i in $(seq 1 50); do
        pids=$(find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null); [ -z "$pids" ] && break
        kill -KILL $pids 2>/dev/null; sleep 0.1
      done
      find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null; [ ! -d "$d" ]' bash "$CG" || echo "systemd-sandbox: cgroup cleanup failed" >&2
  fi
  rm -rf "$S/state" "$S/units" "$S/run" "$S/empty"
}

[ "$(id -u)" = 0 ] || fail "must run as root"
case "${1:-}" in
  inner) inner; exit 1 ;;
  start) [ $# -eq 3 ] || fail "usage: $0 start SCRATCH MOUNT_ROOT"
    for c in unshare script setpriv busctl mountpoint realpath pgrep awk sed md5sum /usr/bin/dbus-daemon /lib/systemd/systemd; do
      command -v "$c" > /dev/null || fail "missing $c (needs util-linux, bsdutils, procps, systemd, dbus)"
    done
    do_start "$2" "$3" ;;
  stop) [ $# -eq 2 ] || fail "usage: $0 stop SCRATCH"; do_stop "$2" ;;
  *) fail "usage: $0 start SCRATCH MOUNT_ROOT | stop SCRATCH" ;;
esac
