#!/bin/sh
# rootfs.sh OUT.tar: the sandbox tests' image, a root filesystem of the
# host's busybox-static (/bin/busybox, one link per applet) and bash-static
# (as /bin/bash), imported through the API as weft-test:latest. Nothing is
# downloaded: `make test` installs both packages (Makefile APT_PACKAGES).
set -eu
out=$(realpath -m "$1")
r=$(mktemp -d)
trap 'rm -rf "$r"' EXIT
mkdir -p "$r/bin" "$r/usr" "$r/dev" "$r/proc" "$r/sys" "$r/etc" "$r/root" "$r/work" "$r/tmp" "$r/var/tmp"
cp /bin/busybox "$r/bin/busybox"
cp /bin/bash-static "$r/bin/bash"
for a in $("$r/bin/busybox" --list); do [ -e "$r/bin/$a" ] || ln -s busybox "$r/bin/$a"; done
ln -s ../bin "$r/usr/bin"; ln -s bin "$r/sbin"; ln -s ../bin "$r/usr/sbin"
chmod 1777 "$r/tmp" "$r/var/tmp"
printf 'root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' > "$r/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$r/etc/group"
tar --numeric-owner --owner=0 --group=0 -C "$r" -cf "$out" .
