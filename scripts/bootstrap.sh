#!/usr/bin/env bash
# Installs the Debian packages ailoop needs to build and test, if missing.
#   scripts/bootstrap.sh         to build and to run every test
#   scripts/bootstrap.sh build   to build ailoop alone (what the demo needs)
set -euo pipefail
build_only=false
[ "${1:-}" = build ] && build_only=true

# to build; then what the tests and scripts use: graphviz renders graphs,
# jq reads JSON, procps gives ps, bsdutils script (a terminal), bc sums,
# strace shows a run's durable points, slurm-wlm and munge a single-node
# Slurm cluster for the `executor: slurm` tests, bindfs a FUSE mount (a
# work tree other hosts could write to), git-lfs a real filter driver,
# clang and its runtime (libFuzzer) build the optimised and fuzz build,
# groff and man check the man page
packages=(build-essential cmake pkg-config git libyaml-dev libgit2-dev
	libpcre2-dev libcriterion-dev libjansson-dev)
if ! $build_only; then
	packages+=(graphviz jq procps bsdutils bc strace slurm-wlm munge bindfs
		git-lfs clang libclang-rt-dev groff-base man-db)
	# npm installs the real claude CLI for its end-to-end test (a Node.js from
	# elsewhere, e.g. NodeSource, brings its own npm: keep it)
	command -v npm >/dev/null || packages+=(nodejs npm)
fi

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "installing: ${missing[*]}" >&2
sudo=
[ "$(id -u)" -eq 0 ] || sudo=sudo
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get install -y -q "${missing[@]}" >/dev/null ||
	{ $sudo apt-get update -q >/dev/null && $sudo apt-get install -y -q "${missing[@]}" >/dev/null; }
