#!/usr/bin/env bash
# A resolver agent (on_conflict: {agent: PATH}) that leaves a symbolic
# link where the conflicted file was gets the link committed as a link,
# whatever it points to (a file outside the repository, nothing, a
# directory): nothing is read through it. What is neither a file nor a
# link (a directory), or lies beyond a link the resolver put on its way,
# is a failed resolution, the `conflict` a resolver that left markers
# gets, never an error of ailoop's.
. "$(dirname "$0")/lib.sh"

export OUT=$TEST_TMP/outside KIND
mkdir -p "$OUT"
echo secret >"$OUT/secret.txt"

# link_repo NAME KIND: children a and b both write sub/s.txt and t.txt; the
# resolver leaves what KIND says in sub/s.txt, and resolves t.txt (but for
# KIND mixed); then runs it
link_repo() {
	R=$TEST_TMP/$1 KIND=$2
	new_repo "$R"
	cd "$R"
	mkdir -p .ai-loop/agents sub
	echo base >sub/s.txt
	echo base >t.txt
	printf -- "---\nname: w\ncommand: '%s'\n---\n" 'echo "$AILOOP_NODE_ID" >sub/s.txt; echo "$AILOOP_NODE_ID" >t.txt' \
		>.ai-loop/agents/w.md
	printf -- '---\nname: r\ncommand: sh .ai-loop/agents/r.sh\n---\nResolve.\n' >.ai-loop/agents/r.md
	cat >.ai-loop/agents/r.sh <<'SH'
rm -f sub/s.txt
[ "$KIND" = mixed ] || echo ab >t.txt
case $KIND in
file-link) ln -s "$OUT/secret.txt" sub/s.txt ;;
dangling) ln -s "$OUT/nothing" sub/s.txt ;;
dir-link) ln -s "$OUT" sub/s.txt ;;
dir | mixed) mkdir sub/s.txt && echo inner >sub/s.txt/inner ;;
beyond) rm -r sub && mkdir "$OUT/sub" && echo outside-content >"$OUT/sub/s.txt" && ln -s "$OUT/sub" sub ;;
esac
SH
	cat >.ai-loop/flow.yaml <<'YAML'
version: 1
flow:
  id: par
  type: parallel
  isolation: worktree
  on_conflict: {agent: .ai-loop/agents/r.md}
  children:
    - {id: a, skill: a, agent: .ai-loop/agents/w.md}
    - {id: b, skill: b, agent: .ai-loop/agents/w.md}
YAML
	commit_all .
	run "$AILOOP" run "resolve"
}

# --- a link, to a file outside, to nothing, to a directory: committed as that link --------------
for kind in file-link:secret.txt dangling:nothing dir-link:; do
	link_repo "${kind%%:*}" "${kind%%:*}"
	target=$OUT${kind#*:}
	[ -n "${kind#*:}" ] && target=$OUT/${kind#*:}
	expect_rc 0 "$KIND: the resolved merge completes the run"
	expect_eq "$(git ls-tree HEAD sub/s.txt | cut -c1-6)" "120000" "$KIND: the merge commits a link"
	expect_eq "$(git cat-file blob HEAD:sub/s.txt)" "$target" "$KIND: the link's target, not what it points to"
	expect_eq "$(readlink sub/s.txt)" "$target" "$KIND: the main work tree holds the link"
	expect_in "$(git log --merges --format=%s | tr '\n' ,)" "merge b, resolved by .ai-loop/agents/r.md" \
		"$KIND: the merge says the resolver resolved it"
	expect_eq "$(git status --porcelain)" "" "$KIND: clean tree at the end"
done
expect_eq "$(ls -A "$OUT" | tr '\n' ' ')" "secret.txt " "nothing is written outside the repository"

# --- a directory in the file's place: the resolution failed, nothing merged ---------------
link_repo dir dir
expect_rc 1 "a directory where the file was: the node fails"
expect_in "$out$err" "conflict: sub/s.txt, t.txt differ between 'ai-loop/resolve' and 'ai-loop/resolve--b'; the resolver left 'sub/s.txt' as neither a file nor a symbolic link" \
	"the conflict says what the resolver left"
expect_eq "$(git show HEAD:sub/s.txt)" "a" "the first child is merged, the conflicting one not"
expect_eq "$(run_status)" "failed" "the run failed, as with markers left"
run "$AILOOP" resume
expect_rc 66 "resume: nothing to resume (no internal error)"

# --- markers left in one file, a directory in another's place: both said -------------------
link_repo mixed mixed
expect_rc 1 "markers and a directory: the node fails"
expect_in "$out$err" "the resolver left conflict markers in t.txt, and 'sub/s.txt' as neither a file nor a symbolic link" \
	"the conflict says both"

# --- the file beyond a link the resolver put on its way: failed, nothing read through it -----
link_repo beyond beyond
expect_rc 1 "a link where the file's directory was: the node fails"
expect_in "$out$err" "the resolver left 'sub/s.txt' beyond 'sub', which is no directory" \
	"the conflict says where the file went"
expect_eq "$(git show HEAD:sub/s.txt)" "a" "nothing of what the link points to is merged"
git cat-file -e "$(echo outside-content | git hash-object --stdin)" 2>/dev/null &&
	fail "what the link points to is in the repository's objects" || pass
expect_eq "$(run_status)" "failed" "the run failed"

finish
