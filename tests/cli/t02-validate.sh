#!/usr/bin/env bash
# The flow corpus: every valid flow validates; every invalid flow fails with
# exit 65 and exactly the errors listed for it in invalid/EXPECTED, each at
# its LINE:COL with its message. An error in another file (an agent file the
# flow names) is listed with that file's path: `FLOW PATH:LINE:COL MESSAGE`.
# README files document a folder and are not flows.
. "$(dirname "$0")/lib.sh"

cd "$FIXTURES/flows"

nvalid=0
for f in valid/*; do
	case ${f#valid/} in README*) continue ;; esac
	run "$AILOOP" validate --flow "$f"
	expect_rc 0 "valid flow $f"
	expect_in "$out" "$f: ok:" "summary of $f"
	nvalid=$((nvalid + 1))
done

ninvalid=0
for f in invalid/*; do
	name=${f#invalid/}
	case $name in EXPECTED | README*) continue ;; esac
	ninvalid=$((ninvalid + 1))
	want=$(grep -c "^$name " invalid/EXPECTED || true)
	if [ "$want" -eq 0 ]; then
		fail "$f has no expectation in invalid/EXPECTED"
		continue
	fi
	run "$AILOOP" validate --flow "$f"
	expect_rc 65 "invalid flow $f"
	while read -r file pos msg; do
		[ "$file" = "$name" ] || continue
		case $pos in
		*:*:*) where=$pos ;; # PATH:LINE:COL, in a file the flow names
		*) where=$f:$pos ;;
		esac
		expect_in "$err" "$where: error: " "position $where for $f"
		# several errors may share a position: any of them may match
		lines=$(printf '%s\n' "$err" | grep -F -- "$where: error: ")
		expect_in "$lines" "$msg" "message at $where for $f"
	done <invalid/EXPECTED
	# no more errors than expected: agent-file errors count too
	got=$(printf '%s\n' "$err" | grep -c ': error: ' || true)
	expect_eq "$got" "$want" "number of errors in $f"
done

# files too large or not text are refused before parsing
head -c 1100000 /dev/zero | tr '\0' '#' >"$TEST_TMP/huge.yaml"
run "$AILOOP" validate --flow "$TEST_TMP/huge.yaml"
expect_rc 65 "flow over 1 MiB"
expect_in "$err" "huge.yaml:1:1: error: flow file is larger than 1 MiB" "size limit message"

printf 'flow: {id: a, type: action}\n\0\0\0' >"$TEST_TMP/nul.yaml"
run "$AILOOP" validate --flow "$TEST_TMP/nul.yaml"
expect_rc 65 "flow with NUL bytes"
expect_in "$err" "nul.yaml:2:1: error: flow file is not UTF-8 text" "binary flow message"

echo "validated $nvalid valid and $ninvalid invalid flows"
[ "$nvalid" -ge 1 ] && pass || fail "no valid flows found"
finish
