#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Record the abidiff reports test_abi_report.py parses: NAME.report is
# abidiff's stdout, NAME.rc its exit status.  They are real output of the
# installed abigail-tools (Debian 12: 2.2), run with the flags abidiff.py uses,
# so the parser is tested on what the gate really sees, without a kernel
# build.  Regenerate after an abigail-tools upgrade and read the diff.
#
# Three sources of reports:
#   lib.c     compiled into a shared object once per variant (one -D macro,
#             one ABI change) and compared with the build without macros;
#   twin_a.c and twin_b.c, one shared object with two types named struct
#             twin, both changed (-DTWINS_CHANGED); the two dumps are kept
#             too (same-named-types.old.xml, .new.xml), paths cut to file names;
#   abi/gki.xml, the kernel baseline, compared with a copy edited with sed
#             (a changed CRC, a changed parameter type, a resized struct, a
#             removed assembly export): kernel-style reports, with
#             "CRC (modversions)" lines and source locations.

set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../../../.." && pwd)
readonly HERE TOP
readonly BASELINE=$TOP/abi/gki.xml
readonly CC=${CC:-clang-19}
# Keep in step with ABIDW_FLAGS, ABIDIFF_FLAGS and TOOL_ENV in build/gkibuild/abi/abidiff.py.
readonly ABIDW_FLAGS=(--no-corpus-path --no-comp-dir-path --type-id-style hash)
readonly ABIDIFF_FLAGS=(--no-default-suppression --harmless --leaf-changes-only
	--impacted-interfaces)
# and abidw and abidiff see none of the caller's environment (TOOL_ENV).
readonly TOOL_ENV=(env -i PATH=/usr/bin:/bin LC_ALL=C HOME=/nonexistent)
readonly LIB_SYMBOLS=(move paint scale gone fresh counter spare extra raw_copy raw_fill)

usage() {
	cat <<EOF
usage: $0
Rewrites the *.report and *.rc files in $HERE.
Needs $CC and abigail-tools (abidw, abidiff).
EOF
}

die() {
	echo "make_fixtures.sh: $*" >&2
	exit 1
}

# A symbol list in the only header libabigail 2.2 reads (see abidiff.py).
write_list() {
	local out=$1 sym
	shift
	echo '[abi_whitelist]' >"$out"
	for sym in "$@"; do
		echo "  $sym" >>"$out"
	done
}

# build NAME [CFLAGS...]: lib.c as a shared object, dumped like vmlinux.
build() {
	local name=$1
	shift
	"$CC" -g -shared -fPIC -o "$WORK/$name.so" "$@" "$HERE/lib.c"
	"${TOOL_ENV[@]}" abidw "${ABIDW_FLAGS[@]}" --kmi-whitelist "$WORK/lib.list" \
		--out-file "$WORK/$name.xml" "$WORK/$name.so"
}

# record NAME OLD.xml NEW.xml LIST [FLAGS...]: run abidiff as abidiff.py
# does (plus FLAGS), keep both its report and its exit status (non-zero is
# the point, not a failure).
record() {
	local name=$1 old=$2 new=$3 list=$4 rc=0
	shift 4
	"${TOOL_ENV[@]}" abidiff "${ABIDIFF_FLAGS[@]}" "$@" --kmi-whitelist "$list" "$old" "$new" \
		>"$HERE/$name.report" || rc=$?
	[ $((rc & 3)) -eq 0 ] || die "$name: abidiff failed with status $rc"
	echo "$rc" >"$HERE/$name.rc"
	printf '%-34s exit %2d\n' "$name" "$rc"
}

# lib NAME [CFLAGS...]: one variant of lib.c against the plain build.
lib() {
	local name=$1
	shift
	build "$name" "$@"
	record "$name" "$WORK/base.xml" "$WORK/$name.xml" "$WORK/lib.list"
}

# kernel NAME SED-SCRIPT: the baseline against a copy edited by SED-SCRIPT.
kernel() {
	local name=$1 script=$2
	sed "$script" "$BASELINE" >"$WORK/$name.xml"
	cmp -s "$BASELINE" "$WORK/$name.xml" && die "$name: the edit matched nothing in $BASELINE"
	record "$name" "$BASELINE" "$WORK/$name.xml" "$WORK/kernel.list"
}

lib_fixtures() {
	write_list "$WORK/lib.list" "${LIB_SYMBOLS[@]}"
	build base
	lib unchanged
	lib struct-member-added -DSTRUCT_MEMBER_ADDED
	lib struct-member-resized -DSTRUCT_MEMBER_RESIZED
	lib parameter-type-changed -DPARAMETER_TYPE_CHANGED
	lib function-removed -DFUNCTION_REMOVED
	lib function-added -DFUNCTION_ADDED
	lib variable-removed -DVARIABLE_REMOVED
	lib variable-added -DVARIABLE_ADDED
	lib variable-type-changed -DVARIABLE_TYPE_CHANGED
	lib enum-enumerator-added -DENUM_ENUMERATOR_ADDED
	lib enum-enumerator-renumbered -DENUM_ENUMERATOR_RENUMBERED
	lib enum-enumerator-removed -DENUM_ENUMERATOR_REMOVED
	lib nodebug-symbol-removed -DNODEBUG_SYMBOL_REMOVED
	lib nodebug-symbol-added -DNODEBUG_SYMBOL_ADDED
	lib combined -DSTRUCT_MEMBER_ADDED -DPARAMETER_TYPE_CHANGED -DFUNCTION_REMOVED \
		-DFUNCTION_ADDED -DVARIABLE_REMOVED -DVARIABLE_ADDED -DVARIABLE_TYPE_CHANGED \
		-DENUM_ENUMERATOR_ADDED -DENUM_ENUMERATOR_RENUMBERED -DNODEBUG_SYMBOL_ADDED
	# What a suppression the gate did not ask for (a ~/.abignore) leaves:
	# the change counted as filtered out.  It must fail closed.
	printf '[suppress_type]\n  name = point\n' >"$WORK/point.abignore"
	record suppressed-struct "$WORK/base.xml" "$WORK/struct-member-added.xml" \
		"$WORK/lib.list" --suppressions "$WORK/point.abignore"
	# Nothing the gate knows: the kernel has no SONAME.  It must fail closed.
	build soname-old -Wl,-soname,libfixture.so.1
	build soname-new -Wl,-soname,libfixture.so.2
	record soname-changed "$WORK/soname-old.xml" "$WORK/soname-new.xml" "$WORK/lib.list"
}

# Two types of one name, both changed: libabigail 2.2's leaf report shows
# one of them.
twin_fixtures() {
	local v flags
	write_list "$WORK/twin.list" twin_a twin_b
	for v in old new; do
		flags=()
		[ "$v" = new ] && flags=(-DTWINS_CHANGED)
		"$CC" -g -shared -fPIC -o "$WORK/twin-$v.so" "${flags[@]}" "$HERE/twin_a.c" \
			"$HERE/twin_b.c"
		"${TOOL_ENV[@]}" abidw "${ABIDW_FLAGS[@]}" --kmi-whitelist "$WORK/twin.list" \
			--out-file "$WORK/twin-$v.xml" "$WORK/twin-$v.so"
		sed "s|filepath='[^']*/|filepath='|" "$WORK/twin-$v.xml" \
			>"$HERE/same-named-types.$v.xml"
	done
	record same-named-types "$WORK/twin-old.xml" "$WORK/twin-new.xml" "$WORK/twin.list"
}

kernel_fixtures() {
	[ -f "$BASELINE" ] || die "no kernel baseline $BASELINE"
	{
		echo '[abi_whitelist]'
		grep -o "<elf-symbol name='[^']*'" "$BASELINE" | cut -d"'" -f2 | sed 's/^/  /'
	} >"$WORK/kernel.list"
	kernel kernel-crc-only-function \
		"s/\(<elf-symbol name='LZ4_decompress_safe' .* crc='\)0x[0-9a-f]*'/\10x329f0514'/"
	kernel kernel-crc-only-variable \
		"s/\(<elf-symbol name='init_uts_ns' .* crc='\)0x[0-9a-f]*'/\10x12345678'/"
	# LZ4_decompress_safe's last parameter int -> long int, and its CRC, as
	# test_abi_gate.py's scratch build makes it.
	local long_id
	long_id=$(grep -o "<type-decl name='long int' size-in-bits='64' id='[0-9a-f]*'" \
		"$BASELINE" | cut -d"'" -f6)
	[ -n "$long_id" ] || die "no 'long int' in $BASELINE"
	kernel kernel-parameter-type-changed \
		"s/\(<elf-symbol name='LZ4_decompress_safe' .* crc='\)0x[0-9a-f]*'/\10x329f0514'/
		/<function-decl name='LZ4_decompress_safe' /,/<\/function-decl>/s/\(<parameter type-id='\)[0-9a-f]*\(' name='maxDecompressedSize'\)/\1$long_id\2/"
	kernel kernel-struct-resized \
		"s/\(<class-decl name='uts_namespace' size-in-bits='\)[0-9]*'/\13520'/"
	kernel kernel-asm-export-removed "/<elf-symbol name='__arch_copy_from_user' /d"
	kernel kernel-namespace-added \
		"s/\(<elf-symbol name='___ratelimit' .* crc='0x[0-9a-f]*'\)/\1 namespace='GKI_TEST'/"
}

main() {
	[ $# -eq 0 ] || { usage >&2; exit 2; }
	command -v "$CC" >/dev/null || die "$CC not found (set CC=)"
	command -v abidiff >/dev/null || die "abidiff not found: apt-get install abigail-tools"
	WORK=$(mktemp -d)
	trap 'rm -rf "$WORK"' EXIT
	lib_fixtures
	twin_fixtures
	kernel_fixtures
}

main "$@"
