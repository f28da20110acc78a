#!/bin/sh
# Dedicated ping-pong rate on loopback, each rank pinned to its own CPU (taskset), in every receive mode, plus
# the Open MPI ping-pong when it is built. Writes the raw result lines and a CSV into
# crates/bench/runs/<date>-<host>/ and prints a summary (median of the repetitions).
#
# usage: crates/bench/scripts/measure-pingpong.sh [seconds per run, default 3] [repetitions, default 3]
# NICE=-20 runs the ranks at nice -20, so that other people's work on a shared machine barely takes their CPUs
# (an approximation of "dedicated"; the CSV records the nice value and the 1-minute load average). With
# autogroup scheduling on (kernel.sched_autogroup_enabled = 1), nice only ranks a process within its own
# session, so the script then moves itself into a new session (setsid) and gives that whole autogroup the nice
# value (/proc/self/autogroup).
# Needs: cargo build --release -p cosched-bench (and crates/bench/mpi/build.sh for the MPI line).
# It starts only its own processes and waits for them; nothing is left running.
set -eu
nice_value=${NICE:-0}
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
csv=$out/pingpong-dedicated-nice$nice_value.csv
echo "nice,program,mode,repetition,round_trips,wall_s,rate_per_s,rtt_p50_us,rtt_p99_us,rank0_cpu_share,rank1_cpu_share,rank1_blocked_waits,loadavg_1m" > "$csv"
field() { sed -n "s/.*\"$1\":\([0-9.e+-]*\).*/\1/p" "$2"; }
port=7400
for rep in $(seq 1 "$reps"); do
  for mode in spin-only spin-block:1600 block; do
    port=$((port + 1))
    load=$(cut -d' ' -f1 /proc/loadavg)
    nice -n "$nice_value" taskset -c 0 "$bin/cosched-pingpong" --listen 127.0.0.1:$port --duration-s "$seconds" --recv "$mode" \
      > "$out/r0.json" 2> "$out/r0.err" &
    pid=$!
    nice -n "$nice_value" taskset -c 1 "$bin/cosched-pingpong" --rank 1 --connect 127.0.0.1:$port --duration-s "$seconds" --recv "$mode" \
      > "$out/r1.json"
    wait "$pid"
    cat "$out/r0.json" >> "$out/pingpong-raw-nice$nice_value.jsonl"
    cat "$out/r1.json" >> "$out/pingpong-raw-nice$nice_value.jsonl"
    echo "$nice_value,cosched-pingpong,$mode,$rep,$(field work_done "$out/r0.json"),$(field wall_s "$out/r0.json"),$(field rate_per_s "$out/r0.json"),$(field rtt_p50_us "$out/r0.json"),$(field rtt_p99_us "$out/r0.json"),$(field cpu_share "$out/r0.json"),$(field cpu_share "$out/r1.json"),$(field blocked_waits "$out/r1.json"),$load" >> "$csv"
  done
  if [ -x "$root/target/mpi/mpi_pingpong" ] && command -v mpirun >/dev/null 2>&1; then
    load=$(cut -d' ' -f1 /proc/loadavg)
    nice -n "$nice_value" mpirun --allow-run-as-root -np 2 --bind-to core --map-by core --mca btl tcp,self \
      "$root/target/mpi/mpi_pingpong" --duration-s "$seconds" 2>/dev/null | grep '^{' > "$out/r0.json"
    cat "$out/r0.json" >> "$out/pingpong-raw-nice$nice_value.jsonl"
    echo "$nice_value,mpi_pingpong,open-mpi,$rep,$(field work_done "$out/r0.json"),$(field wall_s "$out/r0.json"),$(field rate_per_s "$out/r0.json"),$(field rtt_p50_us "$out/r0.json"),$(field rtt_p99_us "$out/r0.json"),$(field cpu_share "$out/r0.json"),,,$load" >> "$csv"
  fi
done
rm -f "$out/r0.json" "$out/r1.json" "$out/r0.err"
echo "raw: $out/pingpong-raw-nice$nice_value.jsonl  csv: $csv"
echo "nice $nice_value, program mode: median rate (rt/s), median p50 / p99 (us) over $reps runs of ${seconds}s"
tail -n +2 "$csv" | cut -d, -f2,3 | sort -u | while IFS=, read -r program mode; do
  median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
  rows=$(grep "^$nice_value,$program,$mode," "$csv")
  rate=$(echo "$rows" | cut -d, -f7 | median)
  p50=$(echo "$rows" | cut -d, -f8 | median)
  p99=$(echo "$rows" | cut -d, -f9 | median)
  printf '%-17s %-16s %10.0f  %8.1f / %8.1f\n' "$program" "$mode" "$rate" "$p50" "$p99"
done | tee "$out/summary-nice$nice_value.txt"
