#!/usr/bin/env bash
# A repository whose index is large (4,000 tracked files, well over the
# 256 KB from which the file an index write replaces is freed only once
# the next agent has started): each iteration's commit holds the
# file its agent changed, git finds the index it left matching HEAD and
# the work tree before every agent, and the repository checks clean.
. "$(dirname "$0")/lib.sh"

R=$TEST_TMP/large
STAGED=$TEST_TMP/staged.log
new_repo "$R"
cd "$R"
LC_ALL=C awk 'BEGIN { for (i = 0; i < 4000; i++) {
	d = sprintf("d%d", int(i / 500)); if (i % 500 == 0) system("mkdir -p " d)
	f = sprintf("%s/file-%04d.txt", d, i); print "file " i > f; close(f) } }'
echo 0 >count
# each agent first asks git whether the index differs from HEAD, or (the
# run's own files aside, which ailoop writes on) from the work tree: it
# must not, ailoop's last commit left them equal; it logs if it does
export STAGED
command_agents "$R" \
	'git diff --cached --quiet || echo "sensor: staged" >>"$STAGED"; c=$(cat count); echo "count $c"; test "$c" -ge 12' \
	'git diff --cached --quiet && git diff --quiet -- . ":!.ai-loop/runs" || echo "actuator: differs" >>"$STAGED"; c=$(($(cat count) + 1)); echo $c >count; f=$(printf "d%d/file-%04d.txt" $((c % 8)) $((c % 8 * 500 + c))); echo "changed at $c" >>"$f"'
one_loop "$R" act.md "max_iterations: 20"
commit_all "$R"
size=$(stat -c %s .git/index)
[ "$size" -gt $((256 * 1024)) ] && pass || fail "the index is over 256 KB (it is $size bytes)"
start=$(git rev-parse HEAD)

run "$AILOOP" run "change a file per iteration"
expect_rc 0 "the run completes"
expect_eq "$(cat count)" 12 "the agent counted to the target"
expect_eq "$(cat "$STAGED" 2>/dev/null)" "" "no agent found the index apart from HEAD or the work tree"
expect_eq "$(git status --porcelain)" "" "the work tree is committed whole"
expect_eq "$(git diff --name-only "$start" HEAD -- 'd*' | wc -l)" 12 \
	"the run's commits hold every file its agent changed"
for c in 3 8 12; do
	f=$(printf "d%d/file-%04d.txt" $((c % 8)) $((c % 8 * 500 + c)))
	commit=$(git log --format=%H --grep="^\[iteration\] $c\$" -1 "$start..HEAD")
	expect_in "$(git diff --name-only "$commit^" "$commit")" "$f" \
		"iteration $c's commit holds the file its agent changed"
	expect_eq "$(git show "$commit:$f" | tail -1)" "changed at $c" "with what it wrote"
done
expect_eq "$(git ls-files | wc -l)" "$(git ls-tree -r HEAD | wc -l)" \
	"the index lists what HEAD's tree does"
check_history "$R"

finish
