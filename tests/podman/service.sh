#!/bin/sh
# service.sh DIR: a Podman Docker-API service at unix://DIR/podman.sock
# with all of its state under DIR, for the sandbox tests (tests/src/podman.rs).
# Runs in the foreground; tests/podman/stop.sh DIR stops it and cleans up.
#
# It runs in a private mount namespace so that what Podman and runc keep at
# fixed host paths (the lock segment in /dev/shm, the blob cache under
# /var/lib/containers, runc's state in /run/runc) lands under DIR too, and
# two services (two test processes) never share a lock table. /tmp stays
# shared, so host directories can still be bind-mounted into containers.
# docs/sandbox.md says why each setting is there.
set -eu
D=$(realpath -m "$1")
if [ "${WEFT_PODMAN_IN_NAMESPACE:-}" != 1 ]; then
  mkdir -p "$D/varlib" "$D/runc"
  export WEFT_PODMAN_IN_NAMESPACE=1
  exec unshare --mount --propagation private sh "$0" "$D"
fi
mount -t tmpfs -o mode=1777,size=64m tmpfs /dev/shm
mkdir -p /var/lib/containers /run/runc
mount --bind "$D/varlib" /var/lib/containers
mount --bind "$D/runc" /run/runc
# conmon writes a file named "oom" into its working directory on an OOM kill.
cd "$D"
mkdir -p root runroot tmp cni volumes vartmp
# runc, not crun: crun refuses cgroup v1/hybrid hosts. cgroupfs: no systemd
# is assumed. An exec is forgotten exit_command_delay seconds after it ends
# (its two conmons wait that long): long enough to read its exit code,
# short enough that few linger.
# Podman's default rlimits for root are above the host's hard limits on
# machines like CI (nofile 20000), and runc then fails to start any
# container ("error setting rlimit type 7"): ask for what the host allows.
nofile=$(awk '/^Max open files/ {print $5}' /proc/self/limits)
nproc=$(awk '/^Max processes/ {print $4}' /proc/self/limits)
[ "$nofile" = unlimited ] && nofile=1048576
if [ "$nproc" = unlimited ] || [ "$nproc" -gt 4096 ]; then nproc=4096; fi
cat > containers.conf <<CONF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
log_driver = "k8s-file"
[network]
network_config_dir = "$D/cni"
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$D/events.log"
tmp_dir = "$D/tmp"
static_dir = "$D/root/libpod"
volume_path = "$D/volumes"
exit_command_delay = 10
conmon_env_vars = ["PATH=/usr/sbin:/usr/bin:/sbin:/bin", "CONTAINERS_CONF=$D/containers.conf", "CONTAINERS_STORAGE_CONF=$D/storage.conf", "CONTAINERS_REGISTRIES_CONF=$D/registries.conf"]
CONF
printf '[storage]\ndriver = "overlay"\ngraphroot = "%s/root"\nrunroot = "%s/runroot"\n' "$D" "$D" > storage.conf
: > registries.conf
export CONTAINERS_CONF="$D/containers.conf" CONTAINERS_STORAGE_CONF="$D/storage.conf" \
  CONTAINERS_REGISTRIES_CONF="$D/registries.conf" TMPDIR="$D/vartmp"
# The global flags are passed on to the cleanup commands conmon runs, which
# keeps them under DIR as well.
exec podman --root "$D/root" --runroot "$D/runroot" --tmpdir "$D/tmp" \
  --storage-driver overlay --runtime runc --cgroup-manager cgroupfs \
  --events-backend file --network-config-dir "$D/cni" --volumepath "$D/volumes" \
  system service --time=0 "unix://$D/podman.sock"
