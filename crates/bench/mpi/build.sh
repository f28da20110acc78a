#!/bin/sh
# Build the Open MPI ping-pong into target/mpi/ (or $1) with mpicc, when mpicc exists.
# Exit 0 with a note when mpicc is missing (Debian: apt-get install openmpi-bin libopenmpi-dev), so a
# build script can call this unconditionally; exit 1 if mpicc exists but the build fails.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=${1:-$root/target/mpi}
if ! command -v mpicc >/dev/null 2>&1; then
    echo "mpi/build.sh: mpicc not found; skipping mpi_pingpong (apt-get install openmpi-bin libopenmpi-dev)" >&2
    exit 0
fi
mkdir -p "$out"
mpicc -O2 -Wall -Wextra -std=c11 -D_POSIX_C_SOURCE=200809L -o "$out/mpi_pingpong" "$here/mpi_pingpong.c"
echo "$out/mpi_pingpong"
