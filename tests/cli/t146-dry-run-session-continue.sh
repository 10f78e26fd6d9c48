#!/usr/bin/env bash
# --dry-run shows the command line an agent of `session: continue` runs:
# its first call keeps its session, so it has no --no-session-persistence
# (claude) or --ephemeral (codex), the flags of a fresh agent's, which the
# plan showed for it; with --json too.
. "$(dirname "$0")/lib.sh"

# stand-ins for the CLIs, which a dry run only looks for on PATH
mkdir -p "$TEST_TMP/bin"
printf '#!/bin/sh\nexit 0\n' >"$TEST_TMP/bin/claude"
cp "$TEST_TMP/bin/claude" "$TEST_TMP/bin/codex"
chmod +x "$TEST_TMP/bin/claude" "$TEST_TMP/bin/codex"

R=$TEST_TMP/repo
new_repo "$R"
mkdir -p "$R/.ai-loop/agents"
printf -- '---\nname: judge\n---\nJudge.\n' >"$R/.ai-loop/agents/judge.md"
printf -- '---\nname: fixer\nsession: continue\n---\nFix.\n' >"$R/.ai-loop/agents/fixer.md"
printf -- '---\nname: fixer2\nrunner: codex\nsession: continue\n---\nFix.\n' >"$R/.ai-loop/agents/fixer2.md"
cat >"$R/.ai-loop/flow.yaml" <<'YAML'
version: 1
flow:
  id: outer
  type: loop
  controller: .ai-loop/agents/judge.md
  actuator:
    strategy: composite
    child:
      id: inner
      type: loop
      controller: .ai-loop/agents/judge.md
      actuator: {strategy: direct, agent: .ai-loop/agents/fixer2.md}
      termination: {max_iterations: 2}
  termination: {max_iterations: 2}
YAML
commit_all "$R"
cd "$R"

# a fresh controller, and the codex actuator that continues its session
run env PATH="$TEST_TMP/bin:$PATH" "$AILOOP" run --dry-run "fix it"
expect_rc 0 "dry run"
expect_in "$out" "claude -p --permission-mode acceptEdits --no-session-persistence --output-format" \
	"a fresh agent's command line keeps no session"
expect_in "$out" "codex exec --sandbox workspace-write --color never --skip-git-repo-check --json -" \
	"the actuator of session: continue: its first call keeps its session (no --ephemeral)"
expect_not_in "$out" "--ephemeral" "no --ephemeral for the agent that continues its session"
run env PATH="$TEST_TMP/bin:$PATH" "$AILOOP" run --dry-run --json "fix it"
expect_rc 0 "dry run, as JSON"
expect_not_in "$out" "--ephemeral" "the JSON plan: no --ephemeral for the agent that continues its session"

# a claude agent of session: continue
sed -i 's#agents/fixer2.md#agents/fixer.md#' .ai-loop/flow.yaml
commit_all "$R"
run env PATH="$TEST_TMP/bin:$PATH" "$AILOOP" run --dry-run "fix it"
expect_rc 0 "dry run, a claude actuator"
expect_eq "$(grep -c -- '--no-session-persistence' <<<"$out")" 2 \
	"--no-session-persistence for the two controllers alone, not for the actuator that continues its session"

finish
