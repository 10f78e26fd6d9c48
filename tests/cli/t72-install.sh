#!/usr/bin/env bash
# Installing ailoop: --version names the libraries it runs with, the man
# page covers every command, option, exit code and agent variable, bash
# completion completes commands, options, run ids and node paths, and
# `cmake --install` places the binary, man page, completion and templates.
. "$(dirname "$0")/lib.sh"

MAN=$AILOOP_SRC/docs/ailoop.1
COMPLETION=$AILOOP_SRC/completions/ailoop.bash

# the commands `ailoop --help` lists, but `help` itself
commands=$("$AILOOP" --help | awk '/^commands:/{on=1; next} on && /^$/{exit} on{print $1}' |
	grep -vx help)
[ -n "$commands" ] && pass || fail "ailoop --help lists commands"

# options_of CMD: every --option in `ailoop help CMD`'s usage line(s)
options_of() {
	"$AILOOP" help "$1" | awk 'NR == 1 || /^          / {print} /^$/{exit}' |
		grep -o -- '--[a-z][a-z-]*' | sort -u
}

# --- ailoop --version --------------------------------------------------------
run "$AILOOP" --version
expect_rc 0 "--version exits 0"
version=$(sed -n 's/^project(ailoop VERSION \([0-9.]*\).*/\1/p' "$AILOOP_SRC/CMakeLists.txt")
expect_eq "$(printf '%s\n' "$out" | head -n 1)" "ailoop $version" \
	"--version's first line is ailoop and the project's version"
for lib in libgit2 libyaml PCRE2 jansson; do
	expect_in "$out" "
$lib " "--version names the $lib it runs with"
done
if command -v pkg-config >/dev/null; then
	# the libraries found at run time are those installed
	expect_in "$out" "libgit2 $(pkg-config --modversion libgit2)" "--version: libgit2's version"
	expect_in "$out" "libyaml $(pkg-config --modversion yaml-0.1)" "--version: libyaml's version"
	expect_in "$out" "PCRE2 $(pkg-config --modversion libpcre2-8)" "--version: PCRE2's version"
	expect_in "$out" "jansson $(pkg-config --modversion jansson)" "--version: jansson's version"
else
	echo "skipped: library versions against pkg-config (no pkg-config)"
fi

# --- the man page ------------------------------------------------------------
# section NAME: the lines of the man page's section .SH NAME (or .SS NAME)
section() {
	awk -v h="$1" '
		on && (/^\.SH/ || (sub_ && /^\.S[SH]/)) { exit }
		$0 == ".SH " h || $0 == ".SH \"" h "\"" { on = 1; next }
		$0 == ".SS " h { on = 1; sub_ = 1; next }
		on' "$MAN" | sed 's/\\-/-/g'
}

for cmd in $commands; do
	body=$(section "ailoop $cmd")
	if [ -n "$body" ]; then pass; else fail "man page: no section for 'ailoop $cmd'"; fi
	for opt in $(options_of "$cmd"); do
		expect_in "$body" "$opt" "man page: 'ailoop $cmd' documents $opt"
	done
done
expect_in "$(head -n 1 "$MAN")" "\"ailoop $version\"" "man page: its title names the project's version"
synopsis=$(section SYNOPSIS)
for cmd in $commands help; do
	expect_in "$synopsis" "ailoop $cmd" "man page synopsis shows 'ailoop $cmd'"
done

# the exit codes of the README's table, and no others
readme_codes=$(sed -n '/^## Exit status/,/^## /p' "$AILOOP_SRC/README.md" |
	sed -n 's/^| \([0-9][0-9]*\) |.*/\1/p' | tr '\n' ' ')
man_codes=$(section "EXIT STATUS" | sed -n 's/^\.B \([0-9][0-9]*\)$/\1/p' | tr '\n' ' ')
[ -n "$readme_codes" ] && pass || fail "the README has an exit status table"
expect_eq "$man_codes" "$readme_codes" "man page: the exit codes are the README's"
help_codes=$("$AILOOP" --help | sed -n 's/^ *\([0-9][0-9]*\)  [a-z].*/\1/p' | tr '\n' ' ')
expect_eq "$help_codes" "$readme_codes" "--help: the exit codes are the README's"

# every variable an agent gets, and those ailoop reads
environment=$(section ENVIRONMENT)
for var in $(grep -o '"AILOOP_[A-Z_]*"' "$AILOOP_SRC/src/exec/invoke.c" | tr -d '"' | sort -u) \
	AILOOP_FSYNC NO_COLOR; do
	expect_in "$environment" "$var" "man page: ENVIRONMENT names $var"
	grep -q "$var" "$AILOOP_SRC/README.md" && pass || fail "README names $var"
done
files=$(section FILES)
for f in flow.yaml agents/ run-state.md events.jsonl conditions.jsonl memory.jsonl lock \
	orchestrator-output.md task.md controller-output.md actuator-output.md \
	result-output.md sensor- logs/ .gitkeep .git/ailoop.lock; do
	expect_in "$files" "$f" "man page: FILES names $f"
done

if command -v groff >/dev/null; then
	run groff -man -Tutf8 -ww "$MAN"
	expect_rc 0 "groff renders the man page"
	expect_eq "$err" "" "groff -ww: the man page renders without a warning"
	expect_in "$(printf '%s' "$out" | sed 's/.\x08//g')" "EXIT STATUS" \
		"the rendered man page has its sections"
else
	echo "skipped: rendering the man page (no groff)"
fi
if command -v man >/dev/null; then
	run env MANWIDTH=80 man -l "$MAN"
	expect_rc 0 "man -l reads the man page"
	expect_eq "$err" "" "man -l: no complaint"
else
	echo "skipped: man -l (no man)"
fi

# --- the README's runner presets: the command lines --dry-run shows ----------
D=$TEST_TMP/presets
new_repo "$D"
mkdir -p "$D/.ai-loop/agents" "$TEST_TMP/stubs"
runners="claude codex gemini aider opencode"
{
	printf 'version: 1\nflow:\n  id: all\n  type: sequence\n  children:\n'
	for r in $runners; do
		printf '    - {id: %s, type: action, skill: x, agent: .ai-loop/agents/%s.md}\n' "$r" "$r"
		# opencode takes provider/model only
		m=MODEL && [ "$r" != opencode ] || m=provider/MODEL
		printf -- '---\nrunner: %s\nmodel: %s\ntools: TOOLS\ndisallowedTools: DISALLOWED\n---\n{task}\n' \
			"$r" "$m" >"$D/.ai-loop/agents/$r.md"
		printf '#!/bin/sh\nexit 0\n' >"$TEST_TMP/stubs/$r" && chmod +x "$TEST_TMP/stubs/$r"
	done
} >"$D/.ai-loop/flow.yaml"
commit_all "$D"
(cd "$D" && PATH=$TEST_TMP/stubs:$PATH run "$AILOOP" run --dry-run "x"
	printf '%s\n' "$out" >"$TEST_TMP/dry-run")
for r in $runners; do
	line=$(sed -n "s/^ *\\$ \\($r .*\\)/\\1/p" "$TEST_TMP/dry-run" |
		sed -e 's/ < <prompt>$//' -e "s/'<prompt-file>'/PROMPT-FILE/" -e "s/'\\(--[a-zA-Z]*=TOOLS\\)'/\\1/" \
			-e 's/--tools=TOOLS/--tools=TOOL-NAMES/' -e 's/--approval-mode auto_edit/--approval-mode MODE/' \
			-e 's|=provider/MODEL|=MODEL|' \
			-e 's/ --no-session-persistence / SESSION /' -e 's/ --ephemeral / SESSION /' \
			-e 's/--skip-trust --output/--skip-trust SESSION --output/' \
			-e 's/^opencode run --model=MODEL /opencode run --model=MODEL SESSION /')
	# (SESSION: what a fresh agent's session: gives, as the README's table writes it)
	[ -n "$line" ] && pass || fail "--dry-run shows the $r preset's command line"
	grep -qF "| \`$r\` | \`$line\` |" "$AILOOP_SRC/README.md" && pass ||
		fail "README: the $r preset's command line is [$line]"
done

# --- bash completion ---------------------------------------------------------
R=$TEST_TMP/repo
loop_repo "$R" a b
two_loops "$R" fixer.md
commit_all "$R"
(cd "$R" && "$AILOOP" run --quiet "two items" >/dev/null 2>&1) ||
	fail "a first run for the completion to find"
one_loop "$R" fixer.md
printf 'c\n' >"$R/todo.txt"
commit_all "$R" "a one-level flow"
(cd "$R" && "$AILOOP" run --quiet "one item" >/dev/null 2>&1) ||
	fail "a second run for the completion to find"
runs=$(cd "$R/.ai-loop/runs" && ls -d run_* | LC_ALL=C sort)
first=$(printf '%s\n' "$runs" | head -n 1)
[ "$(printf '%s\n' "$runs" | wc -l)" -eq 2 ] && pass || fail "two runs: [$runs]"

# complete_line FILE LINE: the completions FILE offers for LINE (its last
# word, possibly empty, is the one completed), sorted, on one line; in a
# subdirectory of the repository, $R/sub (or $WHERE), with $BIN on the PATH
BIN=$(dirname "$AILOOP")
complete_line() {
	(cd "${WHERE:-$R/sub}" && PATH=$BIN:$PATH bash -c '
		. "$1" || exit 1
		read -r -a COMP_WORDS <<<"$2"
		[[ $2 == *" " ]] && COMP_WORDS+=("")
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		_ailoop
		printf "%s\n" "${COMPREPLY[@]}"' sh "$1" "$2") | LC_ALL=C sort | sed '/^$/d' |
		tr '\n' ' ' | sed 's/ $//'
}
mkdir -p "$R/sub"
sorted() { tr ' ' '\n' | sed '/^$/d' | LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//'; }

expect_eq "$(complete_line "$COMPLETION" "ailoop ")" "$(echo "$commands help" | sorted)" \
	"completion: the commands of ailoop --help"
expect_eq "$(complete_line "$COMPLETION" "ailoop re")" "report resume" "completion: a command's prefix"
expect_eq "$(complete_line "$COMPLETION" "ailoop --v")" "--version" "completion: --version"
for cmd in $commands; do
	got=$(complete_line "$COMPLETION" "ailoop $cmd --")
	for opt in $(options_of "$cmd") --help; do
		expect_in " $got " " $opt " "completion: 'ailoop $cmd' offers $opt"
	done
done
expect_eq "$(complete_line "$COMPLETION" "ailoop run --fl")" "--flow" "completion: an option's prefix"
for cmd in resume status log; do
	expect_eq "$(complete_line "$COMPLETION" "ailoop $cmd ")" "$(echo "$runs" | sorted)" \
		"completion: 'ailoop $cmd' offers the run ids"
done
expect_eq "$(complete_line "$COMPLETION" "ailoop status $first ")" "" \
	"completion: no second run id"
expect_eq "$(complete_line "$COMPLETION" "ailoop log --node ")" "fix" \
	"completion: log --node offers the newest run's node paths"
expect_eq "$(complete_line "$COMPLETION" "ailoop log $first --node ")" "outer outer/inner" \
	"completion: log RUN-ID --node offers that run's node paths"
expect_eq "$(complete_line "$COMPLETION" "ailoop log $first --node outer/")" "outer/inner" \
	"completion: a node path's prefix"
expect_in " $(complete_line "$COMPLETION" "ailoop log --branch ai-loop/") " " ai-loop/two-items " \
	"completion: log --branch offers branches"
expect_eq "$(complete_line "$COMPLETION" "ailoop graph --format ")" "dot mermaid tree" \
	"completion: graph --format"
expect_eq "$(complete_line "$COMPLETION" "ailoop graph --format=")" "dot mermaid tree" \
	"completion: graph --format= as one word"
expect_eq "$(complete_line "$COMPLETION" "ailoop memory ")" "get list set" \
	"completion: memory's subcommands"
expect_eq "$(complete_line "$COMPLETION" "ailoop memory set --")" "--help --json" \
	"completion: memory set --json"
expect_eq "$(complete_line "$COMPLETION" "ailoop help ")" "$(echo "$commands help" | sorted)" \
	"completion: help offers the commands"
expect_eq "$(complete_line "$COMPLETION" "ailoop setup --runner ")" \
	"aider claude codex gemini opencode" "completion: setup --runner offers the presets"
templates=$(cd "$AILOOP_SRC/flows" && ls -- *.yaml | sed 's/\.yaml$//' | sorted)
expect_eq "$(complete_line "$COMPLETION" "ailoop setup --template ")" "$templates" \
	"completion: setup --template offers the templates of flows/"
printf 'x\n' >"$R/sub/flow-x.yaml"
expect_eq "$(complete_line "$COMPLETION" "ailoop validate --flow flow-")" "flow-x.yaml" \
	"completion: --flow offers files"
# runs whose branches are not checked out, as `ailoop status RUN-ID` finds them
git -C "$R" checkout -q main && rm -rf "$R/.ai-loop/runs"
expect_eq "$(complete_line "$COMPLETION" "ailoop status ")" "$(echo "$runs" | sorted)" \
	"completion: the run ids on ai-loop/ branches not checked out"
expect_eq "$(complete_line "$COMPLETION" "ailoop log $first --node ")" "outer outer/inner" \
	"completion: log --node of a run on a branch not checked out"
expect_eq "$(complete_line "$COMPLETION" "ailoop log --node ")" "fix" \
	"completion: log --node of the newest run, on a branch not checked out"
git init -q "$R/sub/inner"
expect_eq "$(WHERE=$R/sub/inner complete_line "$COMPLETION" "ailoop status ")" "" \
	"completion: a repository inside the repository has its own runs, as for ailoop"
outside=$(cd "$TEST_TMP" && PATH=$BIN:$PATH bash -c '. "$1"; COMP_WORDS=(ailoop status ""); COMP_CWORD=2
	_ailoop; echo "${#COMPREPLY[@]}"' sh "$COMPLETION")
expect_eq "$outside" "0" "completion: no run ids outside a repository with .ai-loop"

# --- cmake --install ---------------------------------------------------------
P=$TEST_TMP/prefix
run cmake --install "$(dirname "$AILOOP")" --prefix "$P"
expect_rc 0 "cmake --install"
for f in bin/ailoop share/man/man1/ailoop.1 share/bash-completion/completions/ailoop; do
	[ -s "$P/$f" ] && pass || fail "cmake --install places $f"
done
[ -x "$P/bin/ailoop" ] && pass || fail "the installed binary is executable"
cmp -s "$P/share/man/man1/ailoop.1" "$MAN" && pass || fail "the installed man page is docs/ailoop.1"
for dir in flows agents; do
	for f in "$AILOOP_SRC/$dir"/*; do
		cmp -s "$f" "$P/share/ailoop/$dir/${f##*/}" && pass ||
			fail "cmake --install places the template $dir/${f##*/}"
	done
done
run "$P/bin/ailoop" --version
expect_rc 0 "the installed binary runs"
expect_in "$out" "ailoop $version" "the installed binary prints its version"
if command -v man >/dev/null; then
	run env MANWIDTH=80 man -M "$P/share/man" ailoop
	expect_rc 0 "man finds the installed page"
	expect_in "$out" "ailoop log" "the installed man page is ailoop(1)"
fi
BIN=$P/bin
expect_eq "$(complete_line "$P/share/bash-completion/completions/ailoop" "ailoop setup --template ")" \
	"$(cd "$P/share/ailoop/flows" && ls -- *.yaml | sed 's/\.yaml$//' | sorted)" \
	"installed completion: setup --template offers the installed templates"
expect_eq "$(complete_line "$P/share/bash-completion/completions/ailoop" "ailoop st")" "status" \
	"installed completion: commands"
expect_eq "$(complete_line "$P/share/bash-completion/completions/ailoop" "ailoop log --j")" "--json" \
	"installed completion: options of the installed ailoop"
BIN=$TEST_TMP/nowhere
expect_eq "$(complete_line "$COMPLETION" "ailoop st")" "status" \
	"completion: its own list of commands when ailoop cannot run"

finish
