#!/bin/sh
# The layers of src/ (DESIGN.md; src/README): which module may include
# which.  Every #include "MODULE/x.h" of a file in src/M/ must name M itself
# or a module M may depend on.  Prints each edge against the rules and
# exits 1 when there is one; run by `make check`.
#
#   core      nothing (the IR)
#   io        core
#   compress  core
#   sim       core compress
#   calib     core io compress sim
#   search    core compress sim
#   gnn       core io
#   render    core io
#   export    core
#   train     anything but cli
#   cli       anything
set -u
cd "$(dirname "$0")/.." || exit 2

allowed() {
	case $1 in
	core) echo "" ;;
	io) echo "core" ;;
	compress) echo "core" ;;
	sim) echo "core compress" ;;
	calib) echo "core io compress sim" ;;
	search) echo "core compress sim" ;;
	gnn) echo "core io" ;;
	render) echo "core io" ;;
	export) echo "core" ;;
	train) echo "core io compress sim calib search gnn render export" ;;
	cli) echo "core io compress sim calib search gnn render export train" ;;
	*) echo "?" ;;
	esac
}

bad=0
for dir in src/*/; do
	mod=$(basename "$dir")
	ok=$(allowed "$mod")
	if [ "$ok" = "?" ]; then
		echo "layers: src/$mod is a module the rules do not name (add it to tests/layers.sh and src/README)"
		bad=1
		continue
	fi
	for f in "$dir"*.c "$dir"*.h; do
		[ -e "$f" ] || continue
		# "module/x.h" includes; a bare "x.h" is the file's own module
		sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([a-z_]*\)\/[^"]*".*/\1/p' "$f" |
			sort -u | while read -r dep; do
			[ "$dep" = "$mod" ] && continue
			case " $ok " in
			*" $dep "*) ;;
			*) echo "layers: $f includes $dep/: src/$mod may include only: ${ok:-nothing outside itself}" ;;
			esac
		done
		if grep -q '^[[:space:]]*#[[:space:]]*include[[:space:]]*"\.\./' "$f"; then
			echo "layers: $f includes \"../...\": write \"module/x.h\" (relative to src/)"
		fi
	done
done >"${TMPDIR:-/tmp}/tagplan-layers.$$"
if [ -s "${TMPDIR:-/tmp}/tagplan-layers.$$" ]; then
	cat "${TMPDIR:-/tmp}/tagplan-layers.$$"
	bad=1
fi
rm -f "${TMPDIR:-/tmp}/tagplan-layers.$$"
[ $bad -eq 0 ] && echo "layers: the includes of src/ follow the layers"
exit $bad
