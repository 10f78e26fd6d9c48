# bash completion for ailoop(1): commands, their options, run ids, node
# paths of a run for `log --node`, branches, flow templates and runners.
# Installed as share/bash-completion/completions/ailoop; or source it.

# The commands and a command's options, as the ailoop being completed
# lists them in its help (a list of its own if it cannot be run).
_ailoop_commands()
{
	local prog=$1 list
	list=$("$prog" --help 2>/dev/null |
		awk '/^commands:/ { on = 1; next } on && /^$/ { exit } on { print $1 }')
	printf '%s\n' "${list:-setup run resume status log report land runs clean validate graph agent memory episodes help}"
}

_ailoop_options()
{
	"$1" help "$2" 2>/dev/null | awk 'NR == 1 || /^          / { print } /^$/ { exit }' |
		grep -o -- '--[a-z][a-z-]*' | sort -u
}

# The repository's root as ailoop finds it: the nearest directory upwards
# that holds .ai-loop or .git.
_ailoop_root()
{
	local dir=$PWD
	while :; do
		if [[ -d $dir/.ai-loop || -e $dir/.git ]]; then
			printf '%s\n' "${dir:-/}"
			return 0
		fi
		[[ -z $dir ]] && return 1
		dir=${dir%/*}
	done
}

# The ai-loop/ branches, where ailoop also finds runs whose branch is not
# checked out.
_ailoop_run_branches()
{
	git -C "$1" for-each-ref --format='%(refname:short)' refs/heads/ai-loop/ 2>/dev/null
}

# The run ids of the work tree and of the ai-loop/ branches, oldest first.
_ailoop_runs()
{
	local root run branch
	root=$(_ailoop_root) || return 0
	{
		for run in "$root"/.ai-loop/runs/run_*/; do
			[[ -d $run ]] || continue
			run=${run%/}
			printf '%s\n' "${run##*/}"
		done
		while IFS= read -r branch; do
			git -C "$root" ls-tree --name-only "refs/heads/$branch" .ai-loop/runs/ 2>/dev/null |
				sed -n 's|^\.ai-loop/runs/\(run_[^/]*\)$|\1|p'
		done < <(_ailoop_run_branches "$root")
	} | LC_ALL=C sort -u -t _ -k 2,2n -k 3,3n
}

# _ailoop_nodes RUN-ID: the node paths of that run (of the newest run if
# RUN-ID is empty): the directories under its nodes/ but logs/, in the
# work tree or else on the ai-loop/ branch that holds the run.
_ailoop_nodes()
{
	local root run=$1 nodes dir branch prefix
	root=$(_ailoop_root) || return 0
	if [[ -z $run ]]; then
		run=$(_ailoop_runs | tail -n 1)
		[[ -n $run ]] || return 0
	fi
	nodes=$root/.ai-loop/runs/$run/nodes
	if [[ -f $root/.ai-loop/runs/$run/run-state.md && -d $nodes ]]; then
		while IFS= read -r dir; do
			printf '%s\n' "${dir#"$nodes"/}"
		done < <(find "$nodes" -mindepth 1 -type d ! -name logs 2>/dev/null)
		return 0
	fi
	prefix=.ai-loop/runs/$run/nodes/
	while IFS= read -r branch; do
		while IFS= read -r dir; do
			[[ $dir == "$prefix"* && $dir != */logs ]] && printf '%s\n' "${dir#"$prefix"}"
		done < <(git -C "$root" ls-tree -r -d --name-only "refs/heads/$branch" "$prefix" 2>/dev/null)
	done < <(_ailoop_run_branches "$root") | LC_ALL=C sort -u
}

# Flow template names: the flows/ beside this file in the source tree, or
# share/ailoop/flows once installed, else the templates ailoop ships.
_ailoop_templates()
{
	local here=${BASH_SOURCE[0]%/*} dir f found=''
	[[ $here == "${BASH_SOURCE[0]}" ]] && here=.
	for dir in "$here/../flows" "$here/../../ailoop/flows"; do
		for f in "$dir"/*.yaml; do
			[[ -f $f ]] || continue
			f=${f##*/}
			printf '%s\n' "${f%.yaml}"
			found=1
		done
		[[ -n $found ]] && return 0
	done
	printf '%s\n' single nested three-level tdd reactree-tdd demo
}

_ailoop_branches()
{
	git for-each-ref --format='%(refname:short)' refs/heads 2>/dev/null
}

_ailoop()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prog=${COMP_WORDS[0]} prev='' cmd='' run='' i w words opts
	((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
	COMPREPLY=()

	# --opt=value arrives as three words when '=' breaks words
	if [[ $cur == = ]]; then
		cur=
	elif [[ $prev == = ]] && ((COMP_CWORD > 1)); then
		prev=${COMP_WORDS[COMP_CWORD - 2]}
	elif [[ $cur == --*=* ]]; then
		prev=${cur%%=*}
		cur=${cur#*=}
	fi

	for ((i = 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		if [[ -z $cmd ]]; then
			[[ $w != -* ]] && cmd=$w
		elif [[ $w == run_* ]]; then
			run=$w
		fi
	done

	if [[ -z $cmd ]]; then
		if [[ $cur == -* ]]; then
			words="--help --version"
		else
			words=$(_ailoop_commands "$prog")
		fi
		mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
		return 0
	fi

	case $prev in
	--flow | -f | --task-file | --output | -o | --input)
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
		return 0
		;;
	--format)
		if [[ $cmd == report ]]; then words="html md"; else words="mermaid dot tree"; fi
		mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
		return 0
		;;
	--branch)
		mapfile -t COMPREPLY < <(compgen -W "$(_ailoop_branches)" -- "$cur")
		return 0
		;;
	--node)
		mapfile -t COMPREPLY < <(compgen -W "$(_ailoop_nodes "$run")" -- "$cur")
		return 0
		;;
	--template)
		mapfile -t COMPREPLY < <(compgen -W "$(_ailoop_templates)" -- "$cur")
		return 0
		;;
	--runner)
		mapfile -t COMPREPLY < <(compgen -W "claude codex gemini aider opencode" -- "$cur")
		return 0
		;;
	--levels)
		mapfile -t COMPREPLY < <(compgen -W "1 2 3" -- "$cur")
		return 0
		;;
	--sensor | --max-iterations | --older-than)
		return 0
		;;
	esac

	if [[ $cur == -* ]]; then
		[[ $cmd == help ]] && return 0
		opts=$(_ailoop_options "$prog" "$cmd")
		mapfile -t COMPREPLY < <(compgen -W "$opts --help" -- "$cur")
		return 0
	fi
	case $cmd in
	resume | status | log | report | land)
		[[ -z $run ]] && mapfile -t COMPREPLY < <(compgen -W "$(_ailoop_runs)" -- "$cur")
		;;
	memory)
		for ((i = 1; i < COMP_CWORD; i++)); do
			[[ ${COMP_WORDS[i]} == memory ]] && break
		done
		((COMP_CWORD == i + 1)) &&
			mapfile -t COMPREPLY < <(compgen -W "get set list" -- "$cur")
		;;
	episodes)
		for ((i = 1; i < COMP_CWORD; i++)); do
			[[ ${COMP_WORDS[i]} == episodes ]] && break
		done
		((COMP_CWORD == i + 1)) &&
			mapfile -t COMPREPLY < <(compgen -W "list show search forget" -- "$cur")
		;;
	help)
		mapfile -t COMPREPLY < <(compgen -W "$(_ailoop_commands "$prog")" -- "$cur")
		;;
	esac
	return 0
}

complete -F _ailoop ailoop
