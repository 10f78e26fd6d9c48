# Helpers for the tests that run a real agent CLI (tests/cli/t123-t125):
# sourced after lib.sh, with real_home set to the caller's HOME before it.
#
# The CLI comes from npm at a pinned version, installed once into a cache
# outside the checkout (${XDG_CACHE_HOME:-~/.cache}/ailoop-tests/NAME-VERSION,
# as t75 does for claude); without npm or its registry the test is skipped
# (exit 77). The run happens in a network namespace of its own with only
# loopback (`unshare -rn`) where the machine allows it, the scripted model
# API (tests/fixtures/model-api/) inside it on 127.0.0.1.

SKIP=77
cli_cache=${XDG_CACHE_HOME:-$real_home/.cache}/ailoop-tests

skip() {
	echo "$(basename "$0"): skipped: $*"
	exit "$SKIP"
}

# cli_install NAME PACKAGE VERSION BIN: the CLI's BIN installed, its path in
# $cli_bin; `BIN --version` must print VERSION.
cli_install() {
	local name=$1 package=$2 version=$3 bin=$4 dir tmp
	dir=$cli_cache/$name-$version
	cli_bin=$dir/node_modules/.bin/$bin
	cli_installed "$version" && return 0
	command -v npm >/dev/null && command -v node >/dev/null || skip "npm not installed"
	mkdir -p "$cli_cache" || skip "cannot create $cli_cache"
	# one installer at a time; the others wait and find it installed
	exec 9>"$cli_cache/$name.lock"
	command -v flock >/dev/null && flock -w 900 9
	cli_installed "$version" && return 0
	timeout 30 npm view "$package@$version" version --cache "$cli_cache/npm" \
		--fetch-retries=0 --fetch-timeout=20000 >/dev/null 2>&1 || skip "npm unreachable"
	tmp=$(mktemp -d "$cli_cache/$name.XXXXXX")
	if ! timeout 900 npm install --prefix "$tmp" --cache "$cli_cache/npm" --no-audit --no-fund \
		--loglevel=error "$package@$version" >"$TEST_TMP/npm.log" 2>&1; then
		rm -rf "$tmp"
		fail "npm install $package@$version"
		cat "$TEST_TMP/npm.log" >&2
		finish
	fi
	rm -rf "$dir" && mv "$tmp" "$dir"
	cli_installed "$version" || { fail "$bin $version runs after installing"; finish; }
}

cli_installed() {
	[ -x "$cli_bin" ] && "$cli_bin" --version 2>/dev/null | grep -q "$1"
}

# netns: 1 when `unshare -rn` gives this machine a network namespace with
# loopback up, else 0 (the run then uses the machine's network, and says so)
netns=0
if command -v unshare >/dev/null && command -v ip >/dev/null &&
	unshare -rn sh -c 'ip link set lo up' 2>/dev/null; then
	netns=1
else
	echo "$(basename "$0"): no network namespace here (unshare -rn refused): the CLI runs on the machine's network"
fi

# run_in_netns SERVER CONFIGURE CMD...: in the namespace (when there is
# one), starts tests/fixtures/model-api/SERVER for $R (requests logged to
# $api_log), calls the function CONFIGURE with its port (it points the CLI
# at it) and runs CMD in $R, setting $out, $err and $rc as run does.
run_in_netns() {
	export api_server=$FIXTURES/model-api/$1 api_configure=$2 R api_log netns TEST_TMP
	shift 2
	export -f "$api_configure" wait_for api_inside
	if [ "$netns" = 1 ]; then
		run unshare -rn bash -c 'api_inside "$@"' api_inside "$@"
	else
		run bash -c 'api_inside "$@"' api_inside "$@"
	fi
}

api_inside() {
	local server rc
	[ "$netns" = 1 ] && ip link set lo up
	node "$api_server" "$R" "$TEST_TMP/port" "$api_log" 600 2>"$TEST_TMP/server.err" >/dev/null &
	server=$!
	if ! wait_for "$TEST_TMP/port" 10; then
		echo "the scripted API did not start: $(cat "$TEST_TMP/server.err")" >&2
		return 90
	fi
	"$api_configure" "$(cat "$TEST_TMP/port")"
	(cd "$R" && "$@") && rc=0 || rc=$?
	kill "$server" 2>/dev/null
	return "$rc"
}

# nested_flow RUNNER [SESSION]: in $R, the flow `ailoop setup --template
# nested` writes for RUNNER (its agents and their models as they are), its
# outer test-command sensor replaced by the reviewer agent: every sensor,
# controller and actuator is then the CLI. The actuator's session: is
# SESSION, default continue (actuator_continues checks it). The task:
# greeting.txt.
nested_flow() {
	(cd "$R" && "$AILOOP" setup --yes --template nested --runner "$1" --max-iterations 4 \
		--sensor 'greeting=grep -q "hello, world" greeting.txt' >"$TEST_TMP/setup.out" 2>&1) ||
		{ fail "ailoop setup --template nested --runner $1"; cat "$TEST_TMP/setup.out" >&2; finish; }
	sed -i 's#- \.ai-loop/agents/loop-sensor-greeting\.md#- .ai-loop/agents/loop-sensor-review.md#' \
		"$R/.ai-loop/flow.yaml"
	rm "$R/.ai-loop/agents/loop-sensor-greeting.md"
	sed -i "s/^name: loop-actuator\$/&\\nsession: ${2:-continue}/" "$R/.ai-loop/agents/loop-actuator.md"
	grep -qx "session: ${2:-continue}" "$R/.ai-loop/agents/loop-actuator.md" ||
		{ fail "the actuator's session: ${2:-continue}"; finish; }
	grep -c 'loop-sensor-review.md' "$R/.ai-loop/flow.yaml" | grep -qx 2 ||
		{ fail "the nested flow has the reviewer at both levels"; finish; }
	commit_all "$R"
}

# q JQ-FILTER: over the recorded requests, as one array
q() {
	jq -rs "$1" "$api_log"
}

# show_logs: the agents' last log lines and the server's errors, after a failed run
show_logs() {
	local f
	for f in "$R"/.ai-loop/runs/run_*/nodes/*/logs/*.log "$R"/.ai-loop/runs/run_*/nodes/*/*/logs/*.log; do
		[ -f "$f" ] && printf -- '--- %s:\n%s\n' "$f" "$(tail -n 15 "$f")" >&2
	done
	cat "$TEST_TMP/server.err" >&2
}

# expect_nested_run CLI: what every CLI's run of nested_flow must show: the
# commits and labels, the code fixed through the CLI's tools, every output
# written with its write tool and parsed, one conversation per agent call.
expect_nested_run() {
	local cli=$1 d
	expect_eq "$(label_paths "$R")" \
		"0 delivery, 1.0 delivery/implement, 1.1 delivery/implement, 1.2 delivery/implement, 1.3 delivery/implement, 1 delivery, 2 delivery" \
		"the labels and node paths of the commits, oldest first"
	expect_eq "$(cd "$R" && run_status)" "complete" "the run is complete"
	d=$(git -C "$R" log --format=%B -1)
	expect_eq "$(sed -n 's/^\[target-met\] //p' <<<"$d")" "true" "the last commit has the outer target met"
	expect_eq "$(sed -n 's/^\[sensors\] //p' <<<"$d")" "review: pass" \
		"the last commit: the outer sensor, a $cli agent, passes"
	expect_eq "$(git -C "$R" log --format=%B -1 --grep='^\[iteration\] 0$' | sed -n 's/^\[sensors\] //p')" \
		"review: fail" "0: the outer sensor fails with no greeting.txt"
	expect_eq "$(git -C "$R" log --format=%B -1 --grep='^\[iteration\] 1.1$' | sed -n 's/^\[sensors\] //p')" \
		"review: fail" "1.1: the inner sensor fails on the typo"
	expect_eq "$(git -C "$R" log --format=%B -1 --grep='^\[iteration\] 1.2$' | sed -n 's/^\[sensors\] //p')" \
		"review: pass" "1.2: the inner sensor passes once the typo is fixed"
	expect_in "$(git -C "$R" log --format=%s -1 --grep='^\[iteration\] 1.1$')" "wrote greeting.txt" \
		"1.1's subject is the actuator's summary"
	expect_in "$(git -C "$R" log --format=%s -1 --grep='^\[iteration\] 1.2$')" "fixed greeting.txt" \
		"1.2's subject is the actuator's summary"

	# the code, changed through the CLI's own tools
	expect_eq "$(cat "$R/greeting.txt" 2>/dev/null)" "hello, world" \
		"the actuator's write and edit tools made greeting.txt"
	expect_eq "$(git -C "$R" show "$(git -C "$R" log --format=%H -1 --grep='^\[iteration\] 1.1$'):greeting.txt" 2>&1)" \
		"hello, wrld" "the write tool's content is committed at 1.1"
	expect_eq "$(git -C "$R" show "$(git -C "$R" log --format=%H -1 --grep='^\[iteration\] 1.2$'):greeting.txt" 2>&1)" \
		"hello, world" "the edit tool's fix is committed at 1.2"
	expect_eq "$(q '[.[] | select(.role == "actuator") | .results[] | "\(.kind):\(.is_error)"] | join(" ")')" \
		"read:false read:true write:false write:false read:false read:false edit:false shell:false write:false" \
		"the actuator's tool calls ran, in order (it reads the plan its prompt names and greeting.txt, not there the first time; each call ends writing its output)"

	# every output written with the CLI's write tool, as the prompts say, and parsed
	expect_eq "$(q '[.[] | . as $r | .results[]? | select(.kind == "write" and ((.path // "") | test("/(sensor-review|controller|actuator)-output\\.md$")))
		| "\($r.label) \($r.role):\(.is_error)"] | join(", ")')" \
		"0 sensor:false, 1 controller:false, 1.1 controller:false, 1.1 actuator:false, 1.1 sensor:false, 1.2 controller:false, 1.2 actuator:false, 1.2 sensor:false, 1.3 controller:false, 1 sensor:false, 2 controller:false" \
		"every agent wrote its output file with the CLI's write tool"
	expect_not_in "$err" "asking it again" "no output needed asking for again"
	expect_eq "$(q '[.[] | select(.output_existed == true)] | length')" 0 \
		"no agent found its output file there as it started"
	expect_eq "$(q '[.[] | select(.decision) | "\(.label) \(.decision.met)"] | join(", ")')" \
		"1 false, 1.1 false, 1.2 false, 1.3 true, 2 true" \
		"each controller's decision (from the sensor outputs it read) is the one ailoop committed"

	# every agent was a real CLI process talking to the scripted API
	expect_eq "$(q '[.[] | select(.role != null and .step == 0) | "\(.label) \(.role)"] | join(", ")')" \
		"0 sensor, 1 controller, 1.1 controller, 1.1 actuator, 1.1 sensor, 1.2 controller, 1.2 actuator, 1.2 sensor, 1.3 controller, 1 sensor, 2 controller" \
		"one $cli conversation per agent call, in the loop's order"
	expect_eq "$(q '[.[] | select(.role != null and .stream != true)] | length')" 0 \
		"the agents' requests stream"
	expect_eq "$(q '[.[] | select(.error)] | length')" 0 "the scripted API understood every request"
	if [ "$netns" = 1 ]; then
		pass # a namespace with loopback alone: no connection could leave it
	else
		echo "$(basename "$0"): not isolated: connections outside loopback were not prevented"
	fi
}

# expect_usage_per_call COST-KINDS: the run's agent_usage events (in its
# events.jsonl) against the requests the scripted API logged, each with the
# usage it sent: one event per agent call, in the loop's order, each read
# to its end (known) with the CLI's session id, its tokens the sums of what
# the API sent for that call's requests (the requests of its node, label,
# role and name), and its cost of the kind COST-KINDS says (reported,
# estimated, unknown; one for every call, or a comma-separated list of
# the kinds its calls had). AS, a jq filter, makes of the sums the API
# sent what the CLI reports of them, where it counts them its own way
# (default: as they are).
expect_usage_per_call() {
	local kinds=$1 as=${2:-.} events
	events=$(cat "$R"/.ai-loop/runs/run_*/events.jsonl)
	expect_eq "$(jq -rs '[.[] | select(.event == "agent_usage") | "\(.label) \(.role)"] | join(", ")' <<<"$events")" \
		"$(q '[.[] | select(.role != null and .step == 0) | "\(.label) \(.role)"] | join(", ")')" \
		"an agent_usage event per agent call, in the loop's order"
	expect_eq "$(jq -rs '[.[] | select(.event == "agent_usage") | select(.known != true or (.session | type) != "string" or .session == "")] | length' <<<"$events")" \
		0 "each call's usage read to its end (known), with the CLI's session id"
	expect_eq "$(jq -rs '[.[] | select(.event == "agent_usage") | .session] | unique | length' <<<"$events")" \
		"$(q '[.[] | select(.role != null and .step == 0 and ((.continued // []) | length) == 0)] | length')" \
		"a session of its own for each call, but those that continue an earlier call's"
	expect_eq "$(jq -rs --slurpfile api "$api_log" "def reported: $as;"'
		def key: "\(.node) \(.label) \(.role) \(.name)";
		def total: reduce .[] as $u ({input: 0, output: 0, cache_read: 0, cache_write: 0, reasoning: 0};
					     with_entries(.value += $u[.key]));
		($api | map(select(.role != null)) | group_by(key)
		 | map({key: (.[0] | key), value: (map(.usage) | total | reported)}) | from_entries) as $sent
		| [.[] | select(.event == "agent_usage") | {input, output, cache_read, cache_write, reasoning} as $got
		   | key as $k | select($got != $sent[$k])
		   | "\($k): got \($got | tojson), the API sent \($sent[$k] | tojson)"]
		| if length == 0 then "none" else join("; ") end' <<<"$events")" "none" \
		"calls whose tokens are not the sums of the usage the API sent to their requests"
	expect_eq "$(jq -rs '[.[] | select(.event == "agent_usage") | .cost] | unique | join(",")' <<<"$events")" \
		"$kinds" "each call's cost is $kinds"
}

# actuator_continues NODE: the flow's actuator (session: continue) in NODE
# continued its session at its second call, and no other call continued
# one: the scripted API found, before 1.2's prompt, 1.1's prompt and every
# reply it gave the model then, as they were; both calls had one session,
# the one the node's state keeps.
actuator_continues() {
	local node=$1 events failed_before=$failures
	expect_eq "$(q '[.[] | select(.role != null and .step == 0 and ((.continued // []) | length) > 0)
		| "\(.label) \(.role): " + (.continued | map("\(.label) \(.role) prompt \(.prompt_resent) replies \(.replies_resent)")
		| join("; "))] | join(", ")')" "1.2 actuator: 1.1 actuator prompt true replies true" \
		"session: continue: the actuator's second call sent its first call's prompt and the model's replies again, and no other call sent an earlier one"
	[ "$failures" = "$failed_before" ] ||
		q '.[] | select(.step == 0) | .continued[]? | select(.replies_resent != true or .prompt_resent != true)' >&2
	expect_eq "$(q '[.[] | select(.label == "1.2" and .role == "actuator" and .step == 0) | .continued[0].replies] | join(" ")')" \
		"$(q '[.[] | select(.label == "1.1" and .role == "actuator") | .reply | length] | add')" \
		"the replies sent again are all the model gave the first call (in order, among turns of the CLI's own)"
	events=$(cat "$R"/.ai-loop/runs/run_*/events.jsonl)
	expect_eq "$(jq -rs '[.[] | select(.event == "agent_usage" and .role == "actuator") | .session] | unique | length' <<<"$events")" \
		1 "both of the actuator's calls were in one session"
	expect_eq "$(sed -n '/^sessions:/,/^[^ ]/s/^  actuator: //p' "$R"/.ai-loop/runs/run_*/nodes/"$node"/orchestrator-output.md)" \
		"$(jq -rs '[.[] | select(.event == "agent_usage" and .role == "actuator") | .session][0]' <<<"$events")" \
		"the node's state keeps the actuator's session"
}
