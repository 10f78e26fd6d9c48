#!/usr/bin/env bash
# The kill test of a nested parallel node: a parallel node runs an action
# and a parallel node of two actions (all in the one work tree), so its
# crash points are reached in the run's first process, in its children and
# in its grandchildren. Wherever the crash comes, it ends the whole run (a
# grandchild that stops the run and kills its own parent first must not die
# with it before it has killed the rest: the first process would stay
# stopped for ever); each run is bounded, so such a run fails the test
# instead of hanging it. One `ailoop resume` must then end the run
# as the reference ended.
. "$(dirname "$0")/lib.sh"

T=$TEST_TMP
# every command of the run bounded: 124 if still there after 30 s, and killed
# (`timeout` itself exits 137 when it kills, as the crash does)
real=$AILOOP
AILOOP=$T/ailoop
cat >"$AILOOP" <<SH
#!/bin/bash
"$real" "\$@" &
pid=\$!
if ! timeout 30 tail --pid=\$pid -s 0.02 -f /dev/null; then
	kill -KILL \$pid
	wait \$pid
	exit 124
fi
wait \$pid
SH
chmod +x "$AILOOP"

new_repo "$T/template"
scripted_agents "$T/template" action
cat >"$T/template/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: main
  type: sequence
  children:
    - id: outer
      type: parallel
      isolation: shared
      children:
        - {id: a, skill: a}
        - id: inner
          type: parallel
          isolation: shared
          children:
            - {id: b, skill: b}
            - {id: c, skill: c}
    - {id: last, skill: last}
YAML
cat >"$T/plan" <<'PLAN'
creates "$skill.txt"
PLAN
export PLAN=$T/plan
unset TRAIL
commit_all "$T/template"

# the history, the parallel children's commits (made in any order) as a set
canonical() {
	triples "$1" | grep -v ' main/outer/'
	triples "$1" | grep ' main/outer/' | sort
}
reference_run "$T/template" "deliver it" canonical
expect_eq "$ref_rc $ref_status" "0 complete" "the reference run succeeds"
expect_eq "$(printf '%s\n' "$ref_triples" | tr '\n' ,)" "0 main/last complete,0 main complete,\
0 main/outer/a complete,0 main/outer/inner/b complete,0 main/outer/inner/c complete," "the reference run's path"

kill_each_point "$T/template" "deliver it" canonical lock_free

finish
