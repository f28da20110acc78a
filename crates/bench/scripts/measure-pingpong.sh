#!/bin/sh
# Ping-pong rate on loopback, each rank pinned to its own CPU (taskset), in every receive mode, with K
# CPU-bound competitors (cosched-calcula) pinned beside each rank, plus the Open MPI ping-pong when it is built
# and K = 0. Writes the raw result lines and a CSV into crates/bench/runs/<date>-<host>/ and prints a summary
# (median of the repetitions). No coscheduling agent: K > 0 gives the uncoordinated baseline.
#
# usage: crates/bench/scripts/measure-pingpong.sh [seconds per run, default 3] [repetitions, default 3]
# COMPETITORS=K   competitors per CPU (default 0: the dedicated rate).
# NICE=-20        runs everything at nice -20, so that other people's work on a shared machine barely takes
#                 these CPUs (an approximation of "dedicated"; the CSV records the nice value and the load).
#                 With autogroup scheduling on (kernel.sched_autogroup_enabled = 1) nice only ranks a process
#                 within its own session, so the script then moves itself into a new session (setsid) and
#                 gives that whole autogroup the nice value (/proc/self/autogroup). Ranks and competitors
#                 share that autogroup, so they still compete with each other as equals.
# Needs: cargo build --release -p cosched-bench (and crates/bench/mpi/build.sh for the MPI line).
# Each row records foreign_cpu: the busy time of CPUs 0-1 during the run (/proc/stat) that was not this
# script's ranks and competitors, in CPUs. Where our processes keep both CPUs busy (spinning modes, or K > 0)
# the summary keeps only runs with foreign_cpu < 0.1 (the machine was effectively ours); the others stay in
# the CSV. Blocking ranks without competitors leave the CPUs idle, which other work may use without delaying
# them (at nice -20 their wake-ups preempt it), and mpirun's start-up is not in its ranks' CPU time, so those
# rows are never filtered.
# It starts only its own processes, stops its competitors by pid, and leaves nothing running.
set -eu
nice_value=${NICE:-0}
competitors=${COMPETITORS:-0}
if [ "$nice_value" != 0 ] && [ -z "${COSCHED_AUTOGROUP:-}" ] \
   && [ "$(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null)" = 1 ]; then
  COSCHED_AUTOGROUP=1 exec setsid -w "$0" "$@"
fi
if [ -n "${COSCHED_AUTOGROUP:-}" ]; then
  echo "$nice_value" > /proc/self/autogroup
  echo "measure-pingpong: running in $(cat /proc/self/autogroup)"
fi
seconds=${1:-3}
reps=${2:-3}
root=$(cd "$(dirname "$0")/../../.." && pwd)
bin=$root/target/release
cpus=$(nproc)
[ "$cpus" -ge 2 ] || { echo "measure-pingpong: needs 2 CPUs to pin the ranks apart, this machine has $cpus" >&2; exit 1; }
[ -x "$bin/cosched-pingpong" ] || { echo "measure-pingpong: build first: cargo build --release -p cosched-bench" >&2; exit 1; }
out=$root/crates/bench/runs/$(date -u +%Y-%m-%d)-$(hostname)
mkdir -p "$out"
tag=k$competitors-nice$nice_value
csv=$out/pingpong-$tag.csv
raw=$out/pingpong-$tag.jsonl
tmp=$(mktemp -d)
echo "competitors,nice,program,mode,repetition,round_trips,wall_s,rate_per_s,rtt_p50_us,rtt_p99_us,rank0_cpu_share,rank1_cpu_share,rank1_blocked_waits,competitor_cpu_share_mean,loadavg_1m,foreign_cpu" > "$csv"
field() { sed -n "s/.*\"$1\":\([0-9.e+-]*\).*/\1/p" "$2"; }
# Busy seconds of CPUs 0 and 1 so far (user nice system irq softirq steal, in USER_HZ ticks).
busy_s() { awk -v hz="$(getconf CLK_TCK)" '$1 == "cpu0" || $1 == "cpu1" {b += $2 + $3 + $4 + $7 + $8 + $9} END {printf "%.4f", b / hz}' /proc/stat; }
# foreign CPUs = (busy - our CPU seconds) / wall seconds
foreign() { awk -v b0="$1" -v b1="$2" -v ours="$3" -v wall="$4" 'BEGIN {f = (b1 - b0 - ours) / wall; if (f < 0) f = 0; printf "%.3f", f}'; }
competitor_pids=""
start_competitors() {
  competitor_pids=""
  i=0
  while [ "$i" -lt "$competitors" ]; do
    for cpu in 0 1; do
      nice -n "$nice_value" taskset -c "$cpu" "$bin/cosched-calcula" > "$tmp/calcula-$cpu-$i.json" &
      competitor_pids="$competitor_pids $!"
    done
    i=$((i + 1))
  done
  [ "$competitors" -eq 0 ] || sleep 0.3
}
stop_competitors() {
  share=""
  competitor_cpu=0
  [ -n "$competitor_pids" ] || return 0
  for pid in $competitor_pids; do kill -TERM "$pid"; done
  for pid in $competitor_pids; do wait "$pid" || true; done
  share=$(cat "$tmp"/calcula-*.json | sed -n 's/.*"cpu_share":\([0-9.e+-]*\).*/\1/p' | awk '{s+=$1} END {if (NR) print s/NR}')
  competitor_cpu=$(cat "$tmp"/calcula-*.json | sed -n 's/.*"cpu_s":\([0-9.e+-]*\).*/\1/p' | awk '{s+=$1} END {print s+0}')
  rm -f "$tmp"/calcula-*.json
}
trap 'for pid in $competitor_pids; do kill -TERM "$pid" 2>/dev/null || true; done; rm -rf "$tmp"' EXIT
port=7400
for rep in $(seq 1 "$reps"); do
  for mode in spin-only spin-block:1600 block; do
    port=$((port + 1))
    load=$(cut -d' ' -f1 /proc/loadavg)
    busy0=$(busy_s); t0=$(date +%s.%N)
    start_competitors
    nice -n "$nice_value" taskset -c 0 "$bin/cosched-pingpong" --listen 127.0.0.1:$port --duration-s "$seconds" \
      --recv "$mode" > "$tmp/r0.json" 2> "$tmp/r0.err" &
    pid=$!
    nice -n "$nice_value" taskset -c 1 "$bin/cosched-pingpong" --rank 1 --connect 127.0.0.1:$port \
      --duration-s "$seconds" --recv "$mode" > "$tmp/r1.json"
    wait "$pid"
    stop_competitors
    busy1=$(busy_s); t1=$(date +%s.%N)
    ours=$(awk -v a="$(field cpu_s "$tmp/r0.json")" -v b="$(field cpu_s "$tmp/r1.json")" -v c="$competitor_cpu" 'BEGIN {print a + b + c}')
    wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')
    foreign_cpu=$(foreign "$busy0" "$busy1" "$ours" "$wall")
    cat "$tmp/r0.json" "$tmp/r1.json" >> "$raw"
    echo "$competitors,$nice_value,cosched-pingpong,$mode,$rep,$(field work_done "$tmp/r0.json"),$(field wall_s "$tmp/r0.json"),$(field rate_per_s "$tmp/r0.json"),$(field rtt_p50_us "$tmp/r0.json"),$(field rtt_p99_us "$tmp/r0.json"),$(field cpu_share "$tmp/r0.json"),$(field cpu_share "$tmp/r1.json"),$(field blocked_waits "$tmp/r1.json"),$share,$load,$foreign_cpu" >> "$csv"
  done
  if [ "$competitors" -eq 0 ] && [ -x "$root/target/mpi/mpi_pingpong" ] && command -v mpirun >/dev/null 2>&1; then
    load=$(cut -d' ' -f1 /proc/loadavg)
    busy0=$(busy_s); t0=$(date +%s.%N)
    nice -n "$nice_value" mpirun --allow-run-as-root -np 2 --bind-to core --map-by core --mca btl tcp,self \
      "$root/target/mpi/mpi_pingpong" --duration-s "$seconds" 2>/dev/null | grep '^{' > "$tmp/r0.json"
    busy1=$(busy_s); t1=$(date +%s.%N)
    # Rank 1's CPU is not reported by mpi_pingpong: count it like rank 0's (a ping-pong is symmetric).
    ours=$(awk -v a="$(field cpu_s "$tmp/r0.json")" 'BEGIN {print 2 * a}')
    wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')
    foreign_cpu=$(foreign "$busy0" "$busy1" "$ours" "$wall")
    cat "$tmp/r0.json" >> "$raw"
    echo "$competitors,$nice_value,mpi_pingpong,open-mpi,$rep,$(field work_done "$tmp/r0.json"),$(field wall_s "$tmp/r0.json"),$(field rate_per_s "$tmp/r0.json"),$(field rtt_p50_us "$tmp/r0.json"),$(field rtt_p99_us "$tmp/r0.json"),$(field cpu_share "$tmp/r0.json"),,,,$load,$foreign_cpu" >> "$csv"
  fi
done
echo "raw: $raw  csv: $csv"
echo "K=$competitors nice $nice_value: runs kept (see foreign_cpu), median rate (rt/s), p50 / p99 (us), competitor CPU share"
echo "(each run ${seconds}s; $reps repetitions)"
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
tail -n +2 "$csv" | cut -d, -f3,4 | sort -u | while IFS=, read -r program mode; do
  rows=$(grep "^$competitors,$nice_value,$program,$mode," "$csv" \
    | awk -F, '$16 < 0.1 || ($1 == 0 && ($4 == "block" || $3 == "mpi_pingpong"))')
  kept=$(echo "$rows" | grep -c . || true)
  if [ "$kept" -eq 0 ]; then printf '%-17s %-16s no run without foreign load: re-run\n' "$program" "$mode"; continue; fi
  rate=$(echo "$rows" | cut -d, -f8 | median)
  p50=$(echo "$rows" | cut -d, -f9 | median)
  p99=$(echo "$rows" | cut -d, -f10 | median)
  comp=$(echo "$rows" | cut -d, -f14 | median)
  printf '%-17s %-16s %d/%d %10.0f  %8.1f / %8.1f  %s\n' "$program" "$mode" "$kept" "$reps" "$rate" "$p50" "$p99" "${comp:--}"
done | tee "$out/summary-$tag.txt"
