# hook-cost.sh — what experiments/local/agent-tax.sh and message-tax.sh share (sourced, not run): the checks and
# the probe's build, starting and stopping an agent of the build under test, counting two BPF programs' calls and
# run time around a pass, and the report. The caller sets ROOT (the repository), B (the build's target/release),
# W (its scratch folder) and SOCK (the agent's socket), and writes "CONFIG ROUND NS" lines to $W/runs (hook_cost
# writes "CONFIG NS NS" lines to $W/hooks).
AGENT=
prepare() { # PROBE: checks root, the build and gcc, and compiles experiments/probes/PROBE.c to $W/PROBE
  [ "$(id -u)" = 0 ] || { echo "run as root (the agent needs it)" >&2; exit 2; }
  [ -x "$B/cosched" ] || { echo "build first: cargo build --release --workspace" >&2; exit 2; }
  command -v gcc >/dev/null || { echo "missing gcc: apt-get install gcc" >&2; exit 2; }
  gcc -O2 -o "$W/$1" "$ROOT/experiments/probes/$1.c" || exit 2
}
start_agent() { # ARGS...: the agent's flags
  timeout -k 5 600 "$B/cosched" agent --socket "$SOCK" "$@" >"$W/agent.log" 2>&1 & AGENT=$!
  for _ in $(seq 100); do "$B/cosched" agent --socket "$SOCK" --stats >/dev/null 2>&1 && return 0; sleep 0.05; done
  echo "the agent did not start: $(tail -3 "$W/agent.log")" >&2; exit 1
}
stop_agent() { [ -n "$AGENT" ] && { kill "$AGENT" 2>/dev/null; wait "$AGENT" 2>/dev/null; }; AGENT=; }
hook_counts() { # PROG PROG: prints "calls run_ns" of each, from the agent's statistics
  "$B/cosched" agent --socket "$SOCK" --stats | python3 -c '
import json, sys
d = {p["name"]: p for p in json.load(sys.stdin).get("bpf_programs", [])}
print(" ".join("%d %d" % (d.get(n, {}).get("calls", 0), d.get(n, {}).get("run_ns", 0)) for n in sys.argv[1:]))' "$@"
}
hook_cost() { # CONFIG PROG PROG COMMAND...: runs COMMAND once with the kernel counting; appends "CONFIG ns ns"
  local cfg=$1 p1=$2 p2=$3 before after
  shift 3
  before=$(hook_counts "$p1" "$p2"); "$@" >/dev/null; after=$(hook_counts "$p1" "$p2")
  python3 -c '
import sys
cfg, b, a = sys.argv[1], list(map(int, sys.argv[2].split())), list(map(int, sys.argv[3].split()))
per = lambda i: "%.0f" % ((a[i + 1] - b[i + 1]) / (a[i] - b[i])) if a[i] > b[i] else "-"
print(cfg, per(0), per(2))' "$cfg" "$before" "$after" >> "$W/hooks"
}
report() { # UNIT HOOKS_HEADER FOOTNOTE CONFIG=LABEL...: one markdown row per configuration (the first is the baseline)
  python3 - "$W/runs" "$W/hooks" "$@" <<'PY'
import sys, statistics as st
runs_file, hooks_file, unit, hooks_header, footnote, *configs = sys.argv[1:]
configs = [c.split("=", 1) for c in configs]
runs, hooks = {}, {}
for line in open(runs_file):
    cfg, r, ns = line.split()
    runs.setdefault(cfg, {})[r] = float(ns)
for line in open(hooks_file):
    cfg, a, b = line.split()
    hooks[cfg] = f"{a} / {b}"
base = runs[configs[0][0]]
print(f"| configuration | ns per {unit} (median, range) | × {configs[0][1]} | {hooks_header} ns per call |")
print("|---|---|---|---|")
for cfg, label in configs:
    v = runs[cfg]
    ratio = st.median(v[r] / base[r] for r in v if r in base)
    vals = sorted(v.values())
    print(f"| {label} | {st.median(vals):.0f} ({vals[0]:.0f}–{vals[-1]:.0f}) | {ratio:.3f} | {hooks.get(cfg, '- / -')} |")
print(f"\n{footnote}; the hooks' ns per call counted in a separate pass with kernel.bpf_stats_enabled (which adds two "
      "clock reads to each call).")
PY
}
