#!/usr/bin/env bash
# Builds the libFuzzer targets in Fuzz/ and runs each for FUZZ_SECONDS (Fuzz/README.md).
#
#   FUZZ_SECONDS=600      how long each target runs (libFuzzer -max_total_time)
#   FUZZ_TARGETS="A B"    a subset of the targets (default: all)
#   FUZZ_JOBS=1           how many targets run at the same time
#   FUZZ_ASAN=1           0 builds without AddressSanitizer (libFuzzer's coverage and signal handling only)
#   FUZZ_BUILD=1          0 skips the build (reuses .build-fuzz)
#
# Everything goes under .build-fuzz/ (git-ignored): the build, corpus/<target> (seeded from
# Fuzz/<target>/seeds, and kept from run to run), artifacts/<target> (crash-*, leak-*, timeout-*,
# oom-* inputs) and logs/<target>.log. Prints per target the runs executed, the final cov/ft, and
# CRASH with the artifact's path; exits non-zero if any target crashed or failed to run.
# Reproduce an artifact: SWIFT_BACKTRACE=enable=no .build-fuzz/debug/<target> <artifact>
set -euo pipefail
cd "$(dirname "$0")/.."

all_targets=(FuzzHTTP1RequestParser FuzzUpstreamResponseParser FuzzCompactJWS FuzzStrictJSON FuzzCheckRequest FuzzCELExpression FuzzHTTP2Codec FuzzClaimsReader)
read -r -a targets <<< "${FUZZ_TARGETS:-${all_targets[*]}}"
seconds=${FUZZ_SECONDS:-600}
jobs=${FUZZ_JOBS:-1}
scratch=.build-fuzz

max_len() {
  case $1 in
    FuzzHTTP1RequestParser) echo 16384 ;;      # past the 8192-byte head limit
    FuzzUpstreamResponseParser) echo 16384 ;;  # past the 16 KiB trailer limit
    FuzzHTTP2Codec) echo 131072 ;;             # past the 64 KiB header-list ceiling
    *) echo 4096 ;;
  esac
}

for target in "${targets[@]}"; do
  [ -d "Fuzz/$target" ] || { echo "unknown fuzz target: $target (known: ${all_targets[*]})" >&2; exit 2; }
done

# `--sanitize=fuzzer` (not only -Xswiftc -sanitize=fuzzer) makes SwiftPM link the executables without
# renaming their entry point to `<module>_main`, so libFuzzer's own main is the program's main.
# SwiftPM passes each --sanitize as its own -sanitize= flag and swiftc keeps only the last one, in no
# fixed order, so AddressSanitizer is added as one combined flag after SwiftPM's.
sanitize=(--sanitize=fuzzer)
if [ "${FUZZ_ASAN:-1}" != 0 ]; then sanitize+=(-Xswiftc -sanitize=fuzzer,address); fi

if [ "${FUZZ_BUILD:-1}" != 0 ]; then
  for target in "${targets[@]}"; do
    echo "building $target" >&2
    GATEHOUSE_FUZZ=1 nice -n 10 swift build --scratch-path "$scratch" "${sanitize[@]}" --product "$target"
  done
fi
bin=$(GATEHOUSE_FUZZ=1 swift build --scratch-path "$scratch" "${sanitize[@]}" --show-bin-path)

mkdir -p "$scratch/logs"
run_target() {
  local target=$1 corpus="$scratch/corpus/$1" artifacts="$scratch/artifacts/$1" log="$scratch/logs/$1.log"
  mkdir -p "$corpus" "$artifacts"
  cp -n "Fuzz/$target/seeds/"* "$corpus/" 2>/dev/null || true
  local dict=()
  [ -f "Fuzz/dicts/$target.dict" ] && dict=(-dict="Fuzz/dicts/$target.dict")
  # The Swift runtime's backtracer would take the signal of a trap (fatalError, overflow) before
  # libFuzzer could save the input: off, so every crash leaves its artifact.
  SWIFT_BACKTRACE=enable=no \
    ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:handle_abort=1:symbolize=1}" \
    nice -n 10 "$bin/$target" "$corpus" "${dict[@]}" \
    -max_total_time="$seconds" -max_len="$(max_len "$target")" -timeout=10 -rss_limit_mb=4096 \
    -artifact_prefix="$artifacts/" -print_final_stats=1 > "$log" 2>&1
}

summarize() {
  local target=$1 status=$2 log="$scratch/logs/$1.log"
  local runs cov ft artifact
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  [ -n "$runs" ] || runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -1)
  cov=$(grep -E '^#[0-9]+' "$log" | grep -o 'cov: [0-9]*' | tail -1 | cut -d' ' -f2)
  ft=$(grep -E '^#[0-9]+' "$log" | grep -o 'ft: [0-9]*' | tail -1 | cut -d' ' -f2)
  artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
  if [ -n "$artifact" ]; then
    echo "$target: CRASH $artifact (runs ${runs:-?}, cov ${cov:-?}, ft ${ft:-?}; log $log)"
    return 1
  elif [ "$status" != 0 ]; then
    echo "$target: FAILED (exit $status, no artifact; log $log)"
    return 1
  fi
  echo "$target: ok, runs ${runs:-?}, cov ${cov:-?}, ft ${ft:-?}"
}

echo "fuzzing ${targets[*]} for ${seconds}s each, $jobs at a time" >&2
failed=0
pids=()
names=()
wait_one() {  # waits for the oldest running target and prints its line
  local status=0
  wait "${pids[0]}" || status=$?
  summarize "${names[0]}" "$status" || failed=1
  pids=("${pids[@]:1}")
  names=("${names[@]:1}")
}
for target in "${targets[@]}"; do
  while [ ${#pids[@]} -ge "$jobs" ]; do wait_one; done
  run_target "$target" &
  pids+=($!)
  names+=("$target")
done
while [ ${#pids[@]} -gt 0 ]; do wait_one; done
exit $failed
