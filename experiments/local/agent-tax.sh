#!/bin/bash
# What the agent costs every other task of its machine (issue: the local user keeps its interactive response).
# The agent's scheduler hooks (sched_switch, sched_wakeup) run on every context switch and wake-up of every task,
# managed or not. This runs experiments/probes/switch_cost.c (two processes on one CPU passing a byte through
# pipes: one wake-up and one switch per pass) without the agent, beside an idle agent (no job: the hooks return
# at once, `gate.managing`) and beside an agent that manages a job elsewhere (`sleep`, so the hooks do their
# work for every task), in alternating rounds; then reads the hooks' own run time per call with
# `kernel.bpf_stats_enabled` (set back as it was).
# Prints one markdown row per configuration: ns per pass (median and range over the rounds), × no agent (the
# median of the per-round ratios), and the two hooks' ns per call (which include the statistics' own clock reads:
# a hook that returns at once reads about 50 ns here).
# Usage: sudo experiments/local/agent-tax.sh [ROUNDS] [PASSES] [CPU]      (default: 5 rounds, 200000 passes, CPU 1)
# Needs: cargo build --release --workspace; gcc. COSCHED_BIN=DIR: the agent of another build (its target/release).
set -u
ROUNDS=${1:-5}; PASSES=${2:-200000}; CPU=${3:-1}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${COSCHED_BIN:-$ROOT/target/release}   # COSCHED_BIN=/other/build/target/release: another build (A/B)
W=$(mktemp -d /tmp/cosched-tax.XXXXXX)
STATS_WAS=$(cat /proc/sys/kernel/bpf_stats_enabled)
AGENT= JOB=
stop_agent() {
  [ -n "$JOB" ] && { kill "$JOB" 2>/dev/null; wait "$JOB" 2>/dev/null; }; JOB=
  [ -n "$AGENT" ] && { kill "$AGENT" 2>/dev/null; wait "$AGENT" 2>/dev/null; }; AGENT=
}
trap 'stop_agent; kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; sysctl -qw kernel.bpf_stats_enabled=$STATS_WAS; rm -rf "$W"' EXIT
[ "$(id -u)" = 0 ] || { echo "run as root (the agent needs it)" >&2; exit 2; }
[ -x "$B/cosched" ] || { echo "build first: cargo build --release --workspace" >&2; exit 2; }
command -v gcc >/dev/null || { echo "missing gcc: apt-get install gcc" >&2; exit 2; }
gcc -O2 -o "$W/switch_cost" "$ROOT/experiments/probes/switch_cost.c" || exit 2
SOCK=$W/agent.sock

start_agent() {
  timeout -k 5 600 "$B/cosched" agent --socket "$SOCK" >"$W/agent.log" 2>&1 & AGENT=$!
  for _ in $(seq 100); do "$B/cosched" agent --socket "$SOCK" --stats >/dev/null 2>&1 && return 0; sleep 0.05; done
  echo "the agent did not start: $(tail -3 "$W/agent.log")" >&2; exit 1
}
start_job() { # a process that sleeps, registered as a job: the agent's hooks then do their work for every task
  sleep 600 & JOB=$!
  "$B/cosched" run --socket "$SOCK" --pid "$JOB" --name tax >/dev/null || { echo "the job was not registered" >&2; exit 1; }
}
pass() { "$W/switch_cost" "$CPU" "$PASSES"; }
hook_counts() { # prints "calls run_ns" of sched_switch, then of sched_wakeup, from the agent's statistics
  "$B/cosched" agent --socket "$SOCK" --stats | python3 -c '
import json, sys
d = {p["name"]: p for p in json.load(sys.stdin).get("bpf_programs", [])}
print(" ".join("%d %d" % (d.get(n, {}).get("calls", 0), d.get(n, {}).get("run_ns", 0))
               for n in ("cosched_switch", "cosched_wakeup")))'
}
hook_cost() { # CONFIG: one pass with the kernel counting; appends "CONFIG switch_ns wakeup_ns" per call
  local before after
  before=$(hook_counts); pass >/dev/null; after=$(hook_counts)
  python3 -c '
import sys
cfg, b, a = sys.argv[1], list(map(int, sys.argv[2].split())), list(map(int, sys.argv[3].split()))
per = lambda i: "%.0f" % ((a[i + 1] - b[i + 1]) / (a[i] - b[i])) if a[i] > b[i] else "-"
print(cfg, per(0), per(2))' "$1" "$before" "$after" >> "$W/hooks"
}

sysctl -qw kernel.bpf_stats_enabled=0
: > "$W/runs"
for r in $(seq 1 "$ROUNDS"); do
  printf '\rround %d/%d' "$r" "$ROUNDS" >&2
  echo "none $r $(pass)" >> "$W/runs"
  start_agent
  echo "idle $r $(pass)" >> "$W/runs"
  start_job
  echo "job $r $(pass)" >> "$W/runs"
  stop_agent
done
echo >&2
# The hooks' own cost, counted by the kernel (a separate pass: the counting adds two clock reads per call).
: > "$W/hooks"
sysctl -qw kernel.bpf_stats_enabled=1
start_agent
hook_cost idle
start_job
hook_cost job
stop_agent
sysctl -qw kernel.bpf_stats_enabled="$STATS_WAS"
python3 - "$W/runs" "$W/hooks" "$ROUNDS" "$PASSES" <<'PY'
import sys, statistics as st
runs = {}
for line in open(sys.argv[1]):
    cfg, r, ns = line.split()
    runs.setdefault(cfg, {})[r] = float(ns)
hooks = {"none": ("-", "-")}
for line in open(sys.argv[2]):
    cfg, sw, wk = line.split()
    hooks[cfg] = (sw, wk)
label = {"none": "no agent", "idle": "agent, no job", "job": "agent managing a job"}
print("| configuration | ns per pass (median, range) | × no agent | sched_switch / sched_wakeup ns per call |")
print("|---|---|---|---|")
for cfg in ("none", "idle", "job"):
    v = runs[cfg]
    ratio = st.median(v[r] / runs["none"][r] for r in v if r in runs["none"])
    vals = sorted(v.values())
    print(f"| {label[cfg]} | {st.median(vals):.0f} ({vals[0]:.0f}–{vals[-1]:.0f}) | {ratio:.3f} | {hooks[cfg][0]} / {hooks[cfg][1]} |")
print(f"\n{sys.argv[3]} rounds of {sys.argv[4]} passes, alternating; the hooks' ns per call counted in a separate pass "
      "with kernel.bpf_stats_enabled (which adds two clock reads to each call).")
PY
