# Shared by the A/B benches (h1ab.sh, logout.sh, mcp.sh): source it. One measured wrk run, judged, and the medians.

# measure LABEL URL [wrk arguments...]: a 2 s warm-up, then DURATION s with 50 connections on CPU 0; fails on any
# non-2xx answer; prints "LABEL N req/s  p99 T" and leaves N in $rps.
measure() {
  local label=$1 url=$2 text bad
  shift 2
  taskset -c 0 wrk -t1 -c50 -d2s "$@" "$url" >/dev/null
  text=$(taskset -c 0 wrk -t1 -c50 -d"${DURATION:-6}s" --latency "$@" "$url")
  rps=$(awk '/^Requests\/sec/ { print $2 }' <<<"$text")
  bad=$(awk '/Non-2xx/ { print $NF }' <<<"$text")
  [[ -z $bad ]] || { echo "$label: $bad non-2xx answers" >&2; return 1; }
  echo "$label $rps req/s  p99 $(awk '$1 == "99%" { print $2 }' <<<"$text")"
}

# summarize "A values" "B values" [A name] [B name] [target]: the CPU model, both medians, their ratio and the median of
# the per-round ratios (the figure a noisy VM moves least).
summarize() {
  echo "CPU: $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
  python3 - "$@" <<'PY'
import statistics, sys
a, b = [float(x) for x in sys.argv[1].split()], [float(x) for x in sys.argv[2].split()]
names = (sys.argv[3:5] + ["A", "B"][len(sys.argv[3:5]):])
target = f" (target >= {sys.argv[5]}x)" if len(sys.argv) > 5 else ""
print(f"{names[0]} median {statistics.median(a):.0f}  {names[1]} median {statistics.median(b):.0f}"
      f"  {names[1]}/{names[0]} {statistics.median(b) / statistics.median(a):.3f}"
      f"  paired median {statistics.median([y / x for x, y in zip(a, b)]):.3f}{target}")
PY
}
