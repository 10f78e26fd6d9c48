#!/usr/bin/env bash
# Fails, naming FILE:LINE, when a file of src/ or include/ailoop/ includes a
# header of a layer above its own. The order of the layers is CMake's
# (AILOOP_LAYERS in CMakeLists.txt, the libraries from the bottom up), with
# the commands (cli) on top. A header beside its source ("git_repo.h") is
# its folder's.
#   scripts/check-layers.sh [SOURCE_DIR]
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"

order=$(sed -n 's/^set(AILOOP_LAYERS \(.*\))$/\1/p' CMakeLists.txt)
[ -n "$order" ] || { echo "check-layers: no AILOOP_LAYERS in CMakeLists.txt" >&2; exit 2; }
order="$order cli"

# the rank of a layer in the order, or nothing if it is not one
rank() {
	local i=0 l
	for l in $order; do
		[ "$l" = "$1" ] && { echo $i; return; }
		i=$((i + 1))
	done
}

bad=0
while IFS= read -r file; do
	case $file in
	src/*/*) own=${file#src/} ;;
	include/ailoop/*/*) own=${file#include/ailoop/} ;;
	*) echo "$file: not in a layer's folder" >&2; bad=1; continue ;;
	esac
	own=${own%%/*}
	own_rank=$(rank "$own")
	if [ -z "$own_rank" ]; then
		echo "$file: '$own' is not a layer of CMakeLists.txt's AILOOP_LAYERS" >&2
		bad=1
		continue
	fi
	while IFS=: read -r line header; do
		case $header in
		ailoop/*/*) layer=${header#ailoop/}; layer=${layer%%/*} ;;
		*/*) echo "$file:$line: includes '$header' by a path: name a layer's header" >&2
		     bad=1; continue ;;
		*) continue ;; # beside its source: the same layer
		esac
		r=$(rank "$layer")
		if [ -z "$r" ]; then
			echo "$file:$line: includes '$header' of no layer" >&2
			bad=1
		elif [ "$r" -gt "$own_rank" ]; then
			echo "$file:$line: includes '$header': $layer is above $own" >&2
			bad=1
		fi
	done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$file" |
		 sed 's/^\([0-9]*\):[^"]*"\([^"]*\)".*/\1:\2/')
done < <(find src include -name '*.[ch]' | sort)
exit $bad
