#!/usr/bin/env bash
# Builds ailoop twice, normally and with AddressSanitizer + UBSan, and runs
# every test (Criterion unit tests and end-to-end CLI tests) in both.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/bootstrap.sh
jobs=$(nproc 2>/dev/null || echo 2)

build() {
	local dir=$1
	shift
	cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
	cmake --build "$dir" -j "$jobs" >/dev/null
}

echo "== build (release) and test" >&2
build build
ctest --test-dir build --output-on-failure -j "$jobs"

echo "== build (AddressSanitizer + UBSan) and test" >&2
build build-asan -DAILOOP_SANITIZE=ON
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	ctest --test-dir build-asan --output-on-failure -j "$jobs"
