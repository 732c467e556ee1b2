#!/usr/bin/env bash
# Builds Weft's Debian package from binaries that are already built.
#
#   packaging/deb/build.sh [--fast] BIN_DIR OUT_DIR
#
# BIN_DIR holds `weft`, `weftd` and `weft-desktop` (target/release for
# `make package`, target/debug for the package test in `make test`). The
# package lands in OUT_DIR as weft_VERSION_ARCH.deb; its path is the last
# line printed. --fast compresses with gzip -1 instead of xz: the test's
# package is thrown away, and xz on ~100 MB of binaries takes a minute here.
#
# Needs dpkg-deb and dpkg-shlibdeps (dpkg-dev, which build-essential brings)
# and binutils' strip; no root: file owners are set by `--root-owner-group`.
# What goes where is listed in docs/app.md ("Installing").
set -euo pipefail

fast=0
if [ "${1:-}" = "--fast" ]; then
	fast=1
	shift
fi
if [ $# -ne 2 ]; then
	echo "usage: $0 [--fast] BIN_DIR OUT_DIR" >&2
	exit 2
fi
bin_dir=$(cd "$1" && pwd)
mkdir -p "$2"
out_dir=$(cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

for tool in dpkg-deb dpkg-shlibdeps strip gzip; do
	command -v "$tool" >/dev/null || {
		echo "$0: $tool not found (install dpkg-dev and binutils)" >&2
		exit 1
	}
done
for bin in weft weftd weft-desktop; do
	[ -x "$bin_dir/$bin" ] || {
		echo "$0: $bin_dir/$bin is missing; build it first" >&2
		exit 1
	}
done

# The workspace's version, which every binary reports.
version=$(awk '
	/^\[/ { section = $0 }
	section == "[workspace.package]" && $1 == "version" { gsub(/"/, "", $3); print $3; exit }
' "$repo/Cargo.toml")
[ -n "$version" ] || {
	echo "$0: no [workspace.package] version in $repo/Cargo.toml" >&2
	exit 1
}
reported=$("$bin_dir/weft" --version)
[ "$reported" = "weft $version" ] || {
	echo "$0: $bin_dir/weft says '$reported', the workspace is $version: rebuild it" >&2
	exit 1
}
arch=$(dpkg --print-architecture)

# dpkg-shlibdeps wants a debian/control beside the package's tree
# debian/PACKAGE, as in a source package.
work=$(mktemp -d "$out_dir/.weft-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
root=$work/debian/weft
mkdir -p "$root"
printf 'Source: weft\n\nPackage: weft\nArchitecture: any\n' >"$work/debian/control"

# Binaries, stripped (the release profile keeps line tables for backtraces;
# nobody installs those). All three in /usr/bin: weft and the app find weftd
# beside themselves, and weftd finds the app beside it for notifications.
install -d -m 0755 "$root/usr/bin"
for bin in weft weftd weft-desktop; do
	strip -o "$root/usr/bin/$bin" "$bin_dir/$bin"
	chmod 0755 "$root/usr/bin/$bin"
done
weft=$root/usr/bin/weft

# Manual pages: weft(1) and weft-COMMAND(1) for each command, from the
# same definitions as the options; weftd(1) and weft-desktop(1) from here.
man=$root/usr/share/man/man1
install -d -m 0755 "$man"
"$weft" man >"$man/weft.1"
# `weft --help` lists the commands, two spaces in, under "Commands:".
commands=$("$weft" --help | awk '/^Commands:/ { on = 1; next } on && /^$/ { exit } on { print $1 }')
for command in $commands; do
	[ "$command" = help ] && continue
	"$weft" man "$command" >"$man/weft-$command.1"
done
for page in weftd weft-desktop; do
	sed "s/@VERSION@/$version/" "$here/$page.1" >"$man/$page.1"
done
gzip -9n "$man"/*.1

# Shell completions, where each shell's vendor packages put theirs.
install -d -m 0755 "$root/usr/share/bash-completion/completions" \
	"$root/usr/share/zsh/vendor-completions" "$root/usr/share/fish/vendor_completions.d"
"$weft" completions bash >"$root/usr/share/bash-completion/completions/weft"
"$weft" completions zsh >"$root/usr/share/zsh/vendor-completions/_weft"
"$weft" completions fish >"$root/usr/share/fish/vendor_completions.d/weft.fish"

# The app's menu entry and icons (hicolor: the theme every desktop falls
# back to). The entry is named after the app's identifier
# (src-tauri/tauri.conf.json).
install -D -m 0644 "$here/dev.weft.desktop.desktop" \
	"$root/usr/share/applications/dev.weft.desktop.desktop"
for icon in 32x32:32x32.png 128x128:128x128.png 256x256:128x128@2x.png 512x512:icon.png; do
	install -D -m 0644 "$repo/icons/${icon#*:}" "$root/usr/share/icons/hicolor/${icon%%:*}/apps/weft.png"
done
install -D -m 0644 "$repo/icons/weft.svg" "$root/usr/share/icons/hicolor/scalable/apps/weft.svg"

# weftd as a systemd user service (enabled by each user, not by the package).
install -D -m 0644 "$here/weftd.service" "$root/usr/lib/systemd/user/weftd.service"

install -D -m 0644 "$here/copyright" "$root/usr/share/doc/weft/copyright"

# Modes do not depend on the builder's umask.
find "$root" -type d -exec chmod 0755 {} +
find "$root" -type f ! -path "$root/usr/bin/*" -exec chmod 0644 {} +

# Dependencies: the libraries the binaries link, as the packages that ship
# them, with the versions their symbols need.
depends=$(cd "$work" && dpkg-shlibdeps -O -e"debian/weft/usr/bin/weft" \
	-e"debian/weft/usr/bin/weftd" -e"debian/weft/usr/bin/weft-desktop" 2>/dev/null |
	sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || {
	echo "$0: dpkg-shlibdeps found no dependencies" >&2
	exit 1
}
# The tray's library is loaded at run time (dlopen), so dpkg-shlibdeps
# cannot see it; without it the app runs without a tray.
depends="$depends, libayatana-appindicator3-1"

install -d -m 0755 "$root/DEBIAN"
(cd "$root" && find usr -type f -print0 | sort -z | xargs -0 md5sum) >"$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/md5sums"
installed_size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat >"$root/DEBIAN/control" <<EOF
Package: weft
Version: $version
Architecture: $arch
Maintainer: ${DEB_MAINTAINER:-Weft developers <dev@weft.local>}
Installed-Size: $installed_size
Depends: $depends
Recommends: xdg-utils
Suggests: git, podman | docker.io
Section: devel
Priority: optional
Description: run AI coding-agent workflows (CLI, daemon and desktop app)
 Weft runs workflows written in Fabro's workflow language: graphs of
 commands, language-model prompts, coding agents and human gates, with
 every step recorded and resumable.
 .
 This package holds the weft command line, the weftd daemon (with a
 systemd user service: systemctl --user enable --now weftd) and the Weft
 desktop app.
EOF
chmod 0644 "$root/DEBIAN/control"

deb=$out_dir/weft_${version}_${arch}.deb
if [ "$fast" = 1 ]; then
	compress=(-Zgzip -z1)
else
	compress=(-Zxz)
fi
dpkg-deb --root-owner-group "${compress[@]}" --build "$root" "$deb" >/dev/null
echo "$deb"
