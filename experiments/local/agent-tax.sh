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
. "$ROOT/experiments/local/hook-cost.sh"
JOB=
stop_job() { [ -n "$JOB" ] && { kill "$JOB" 2>/dev/null; wait "$JOB" 2>/dev/null; }; JOB=; }
trap 'stop_job; stop_agent; kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; sysctl -qw kernel.bpf_stats_enabled=$STATS_WAS; rm -rf "$W"' EXIT
prepare switch_cost
SOCK=$W/agent.sock

start_job() { # a process that sleeps, registered as a job: the agent's hooks then do their work for every task
  sleep 600 & JOB=$!
  "$B/cosched" run --socket "$SOCK" --pid "$JOB" --name tax >/dev/null || { echo "the job was not registered" >&2; exit 1; }
}
pass() { "$W/switch_cost" "$CPU" "$PASSES"; }

sysctl -qw kernel.bpf_stats_enabled=0
: > "$W/runs"
for r in $(seq 1 "$ROUNDS"); do
  printf '\rround %d/%d' "$r" "$ROUNDS" >&2
  echo "none $r $(pass)" >> "$W/runs"
  start_agent
  echo "idle $r $(pass)" >> "$W/runs"
  start_job
  echo "job $r $(pass)" >> "$W/runs"
  stop_job; stop_agent
done
echo >&2
# The hooks' own cost, counted by the kernel (a separate pass: the counting adds two clock reads per call).
: > "$W/hooks"
sysctl -qw kernel.bpf_stats_enabled=1
start_agent
hook_cost idle cosched_switch cosched_wakeup pass
start_job
hook_cost job cosched_switch cosched_wakeup pass
stop_job; stop_agent
sysctl -qw kernel.bpf_stats_enabled="$STATS_WAS"
report pass "sched_switch / sched_wakeup" "$ROUNDS rounds of $PASSES passes, alternating" \
  "none=no agent" "idle=agent, no job" "job=agent managing a job"
