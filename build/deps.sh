# SPDX-License-Identifier: GPL-2.0
#
# Host set-up, sourced by build/gki: install missing Debian packages and
# unpack the arm64 guest packages into the output folder.  A no-op when
# everything is present.

# Packages the host needs to build the GKI, the guest userland and the tests.
# Not linux-source-6.12: the source stage fetches the version
# common/source.pin names (build/gkibuild/archive.py), which an unversioned
# install would miss once Debian moves on.
readonly DEPS_HOST=(
	clang-19 lld-19 llvm-19 abigail-tools qemu-system-arm
	lz4 ccache bc bison flex libelf-dev libssl-dev openssl cpio e2fsprogs python3
	make patch rsync xz-utils kmod libc6-dev-arm64-cross libgcc-12-dev-arm64-cross
	liblz4-dev libclang-rt-19-dev distcc
)

# Guest-only arm64 packages: downloaded and unpacked under $GKI_OUT, never
# installed, because busybox-static:arm64 would replace the host's
# /bin/busybox with an arm64 binary.
readonly DEPS_GUEST=(busybox-static liblz4-dev)

deps_missing() {
	local pkg status

	for pkg in "$@"; do
		status=$(dpkg-query -W -f '${db:Status-Status}' "$pkg" 2>/dev/null) || true
		[ "$status" = installed ] || echo "$pkg"
	done
}

# Another apt (unattended-upgrades on a freshly booted machine) may hold
# the dpkg lock for a while: wait for it rather than fail.
deps_apt() {
	DEBIAN_FRONTEND=noninteractive apt-get "$@" -qq -o=Dpkg::Use-Pty=0 \
		-o=DPkg::Lock::Timeout=600 >>"$DEPS_LOG" 2>&1
}

deps_install_host() {
	local missing

	missing=$(deps_missing "${DEPS_HOST[@]}" | tr '\n' ' ')
	missing=${missing% }
	[ -n "$missing" ] || return 0

	if [ "$(id -u)" -ne 0 ]; then
		echo "gki: missing packages: $missing (install them with: sudo apt-get install $missing)" >&2
		return 1
	fi
	echo "gki: installing $missing (log: $DEPS_LOG)"
	if ! deps_apt update || ! deps_apt install -y --no-install-recommends $missing; then
		echo "gki: apt-get install failed; see $DEPS_LOG" >&2
		return 1
	fi
}

# Unpack each guest package into $GKI_OUT/guest-pkgs/<pkg>/ once.
deps_fetch_guest() {
	local dir=$GKI_OUT/guest-pkgs pkg deb

	for pkg in "${DEPS_GUEST[@]}"; do
		[ -e "$dir/$pkg/.unpacked" ] && continue
		if ! dpkg --print-foreign-architectures | grep -qx arm64; then
			[ "$(id -u)" -eq 0 ] || {
				echo "gki: run 'sudo dpkg --add-architecture arm64 && sudo apt-get update' first" >&2
				return 1
			}
			dpkg --add-architecture arm64
			deps_apt update
		fi
		mkdir -p "$dir/debs"
		rm -rf "${dir:?}/$pkg"
		if ! (cd "$dir/debs" && deps_apt download "$pkg:arm64"); then
			# A stale package list names a version the archive dropped.
			deps_apt update
			(cd "$dir/debs" && deps_apt download "$pkg:arm64") || {
				echo "gki: cannot download $pkg:arm64; see $DEPS_LOG" >&2
				return 1
			}
		fi
		deb=$(ls -t "$dir/debs/${pkg}_"*_arm64.deb | head -n 1)
		dpkg-deb -x "$deb" "$dir/$pkg"
		touch "$dir/$pkg/.unpacked"
	done
}

deps_ensure() {
	GKI_OUT=${GKI_OUT:-$TOP/out}
	mkdir -p "$GKI_OUT/logs"
	DEPS_LOG=$GKI_OUT/logs/deps.log
	deps_install_host
	deps_fetch_guest
}
