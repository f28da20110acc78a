#!/bin/bash
# What a message costs the job it belongs to while the agent watches messages (issue: the agent never makes a job
# slower). The message hooks (sock_recv_length on every receive and empty poll, sk_data_ready on every arrival) run
# in the job's own system calls while a managed thread shares its CPU (--watch-hold-ms). This runs
# experiments/probes/message_cost.c (one thread passing a byte over a TCP loopback connection, polling the empty
# socket before each receive) without the agent, then as a job the agent manages with the hooks detached (the
# default while nothing shares a CPU) and attached (--watch-hold-ms 0), in alternating rounds; then reads the hooks'
# own run time per call with `kernel.bpf_stats_enabled` (set back as it was).
# Prints one markdown row per configuration: ns per message (median and range over the rounds), × no agent (the
# median of the per-round ratios), and the two hooks' ns per call (which include the statistics' own clock reads:
# a hook that returns at once reads about 50 ns here).
# Usage: sudo experiments/local/message-tax.sh [ROUNDS] [PASSES] [CPU] [POLLS]
#        (default: 5 rounds, 200000 passes, CPU 1, 1 empty poll before each receive; 8: a spinning rank's wait)
# Needs: cargo build --release --workspace; gcc. COSCHED_BIN=DIR: the agent of another build (its target/release).
set -u
ROUNDS=${1:-5}; PASSES=${2:-200000}; CPU=${3:-1}; POLLS=${4:-1}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${COSCHED_BIN:-$ROOT/target/release}
W=$(mktemp -d /tmp/cosched-msgtax.XXXXXX)
STATS_WAS=$(cat /proc/sys/kernel/bpf_stats_enabled)
. "$ROOT/experiments/local/hook-cost.sh"
trap 'stop_agent; kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; sysctl -qw kernel.bpf_stats_enabled=$STATS_WAS; rm -rf "$W"' EXIT
prepare message_cost
SOCK=$W/agent.sock

pass() { "$W/message_cost" "$CPU" "$PASSES" "$POLLS"; }
managed_pass() { "$B/cosched" run --socket "$SOCK" --name msgtax -- "$W/message_cost" "$CPU" "$PASSES" "$POLLS"; }

sysctl -qw kernel.bpf_stats_enabled=0
: > "$W/runs"
for r in $(seq 1 "$ROUNDS"); do
  printf '\rround %d/%d' "$r" "$ROUNDS" >&2
  echo "none $r $(pass)" >> "$W/runs"
  start_agent
  echo "detached $r $(managed_pass)" >> "$W/runs"
  stop_agent
  start_agent --watch-hold-ms 0
  echo "attached $r $(managed_pass)" >> "$W/runs"
  stop_agent
done
echo >&2
# The hooks' own cost, counted by the kernel (a separate pass: the counting adds two clock reads per call).
: > "$W/hooks"
sysctl -qw kernel.bpf_stats_enabled=1
start_agent --watch-hold-ms 0
hook_cost attached cosched_recv cosched_data_ready managed_pass
stop_agent
sysctl -qw kernel.bpf_stats_enabled="$STATS_WAS"
report message "sock_recv_length / sk_data_ready" \
  "$ROUNDS rounds of $PASSES passes ($POLLS empty polls before each receive), alternating" \
  "none=no agent" "detached=managed, hooks detached" "attached=managed, hooks attached"
