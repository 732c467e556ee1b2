#!/bin/sh
# stop.sh DIR: stops the service tests/podman/service.sh DIR started and
# leaves nothing behind: no process, no cgroup, no mount, no DIR. The
# caller removes the containers through the API first when the service
# still answers; this also copes with a dead service, whose containers
# outlive it (conmon is detached).
D=$(realpath -m "$1")
case "$D" in /*/*) ;; *) echo "stop.sh: refusing to clean up $D" >&2; exit 2 ;; esac
# Every process whose argv names DIR: the service and the conmons of recent
# execs, which otherwise wait out exit_command_delay.
of_dir() {
  for p in /proc/[0-9]*; do
    [ "${p#/proc/}" = $$ ] && continue
    c=$( { tr '\0' ' ' < "$p/cmdline"; } 2>/dev/null) || continue
    case "$c" in *"$D/"*) echo "${p#/proc/}" ;; esac
  done
}
pids=$(of_dir)
[ -n "$pids" ] && kill -TERM $pids 2>/dev/null
i=0
while [ -n "$(of_dir)" ] && [ $i -lt 50 ]; do sleep 0.05; i=$((i + 1)); done
pids=$(of_dir)
[ -n "$pids" ] && kill -KILL $pids 2>/dev/null
# Containers a dead service left running: kill what is in their cgroups
# (v1 and v2 layouts) and remove the cgroups and runc's state.
for id in $(ls "$D"/root/*-containers/ 2>/dev/null | grep -E '^[0-9a-f]{64}$'); do
  for g in /sys/fs/cgroup/*/libpod_parent/libpod-$id /sys/fs/cgroup/libpod_parent/libpod-$id; do
    [ -f "$g/cgroup.procs" ] && kill -KILL $(cat "$g/cgroup.procs") 2>/dev/null
  done
  i=0
  while ls -d /sys/fs/cgroup/*/libpod_parent/libpod-$id /sys/fs/cgroup/libpod_parent/libpod-$id >/dev/null 2>&1 && [ $i -lt 100 ]; do
    rmdir /sys/fs/cgroup/*/libpod_parent/libpod-$id /sys/fs/cgroup/libpod_parent/libpod-$id 2>/dev/null
    sleep 0.05; i=$((i + 1))
  done
  rm -rf "/run/runc/$id"
done
# The namespace's mounts went with its last process; a plain run's overlay
# mount would still be here.
grep -o " $D/[^ ]*" /proc/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null
rm -rf "$D"
