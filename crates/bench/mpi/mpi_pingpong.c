/*
 * mpi_pingpong — the seed's Latency benchmark as a plain, unmodified Open MPI program.
 *
 * Seed: 000_e8004e1596fde6a5.txt §4.1.2 ("two nodes repeatedly exchange a 128-byte packet. Each node records
 * the elapsed wall-clock time for each round trip"). Nothing here knows about coscheduling: the point is to
 * run an ordinary MPI binary under the agent. Open MPI's own progress engine decides how a receive waits
 * (it polls), so --recv is accepted only for a uniform harness interface and echoed as "requested_mode".
 *
 * Flags (the same as cosched-pingpong's, so the lab can start either):
 *   --count N        round trips (default 1000000)
 *   --duration-s S   run for S seconds instead (rank 0 decides and tells rank 1 in the token)
 *   --bytes B        message size (default 128, at least 16)
 *   --recv MODE      accepted and reported, not used
 *
 * Rank 0 prints one JSON line: program, ranks, work_done (= round trips, each token checked byte by byte),
 * work_expected, wall_s, cpu_s, cpu_user_s, cpu_sys_s (getrusage of rank 0), rate_per_s, rtt_p50/p90/p99/mean/max_us,
 * rtt_histogram: the fields of cosched-bench's ResultLine (crates/bench/src/result.rs), which the lab reads.
 * Exit codes: 0 done, 1 a corrupt token or an MPI failure, 2 bad flags.
 *
 * Build: crates/bench/mpi/build.sh (mpicc -O2). Run on loopback:
 *   mpirun --allow-run-as-root --oversubscribe -np 2 --mca btl tcp,self target/mpi/mpi_pingpong --count 10000
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define TAG 7
#define MIN_BYTES 16
/* The report's histogram (as cosched-bench and the simulator): upper edges 10^(k/4) us, k = 0..28, then one
 * open-ended bucket. */
#define COARSE_EDGES 29

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* User and system CPU time of this process so far, seconds. */
static void cpu_times(double *user, double *sys) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    *user = (double)u.ru_utime.tv_sec + u.ru_utime.tv_usec * 1e-6;
    *sys = (double)u.ru_stime.tv_sec + u.ru_stime.tv_usec * 1e-6;
}

/* Byte i of the token of round trip `seq`, sent by `side` (0 ping, 1 pong). */
static unsigned char pattern(uint64_t seq, int side, size_t i) {
    uint64_t mixed = (seq ^ ((uint64_t)side << 48)) * 0x9E3779B97F4A7C15ull;
    return (unsigned char)((mixed >> (8 * (i % 8))) ^ i);
}

/* Token layout: u64 sequence, u64 flags (1 = stop), then the pattern. */
static void fill(unsigned char *buf, size_t bytes, uint64_t seq, int side, uint64_t flags) {
    memcpy(buf, &seq, 8);
    memcpy(buf + 8, &flags, 8);
    for (size_t i = MIN_BYTES; i < bytes; i++) buf[i] = pattern(seq, side, i);
}

static int check(const unsigned char *buf, size_t bytes, uint64_t seq, int side, uint64_t *flags) {
    uint64_t got;
    memcpy(&got, buf, 8);
    memcpy(flags, buf + 8, 8);
    if (*flags & 1) return 1;
    if (got != seq) {
        fprintf(stderr, "mpi_pingpong: round trip %llu: token carries sequence %llu\n",
                (unsigned long long)seq, (unsigned long long)got);
        return 0;
    }
    for (size_t i = MIN_BYTES; i < bytes; i++) {
        if (buf[i] != pattern(seq, side, i)) {
            fprintf(stderr, "mpi_pingpong: round trip %llu: byte %zu is 0x%02x, expected 0x%02x\n",
                    (unsigned long long)seq, i, buf[i], pattern(seq, side, i));
            return 0;
        }
    }
    return 1;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double quantile(const double *sorted, size_t n, double q) {
    size_t rank = (size_t)(q * (double)n + 0.999999999);
    if (rank < 1) rank = 1;
    if (rank > n) rank = n;
    return sorted[rank - 1];
}

static int usage(int rank, const char *problem) {
    if (rank == 0)
        fprintf(stderr,
                "mpi_pingpong: %s\nusage: mpi_pingpong [--count N | --duration-s S] [--bytes B] [--recv MODE]\n",
                problem);
    return 2;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    long long count = 1000000;
    double duration = 0.0;
    long bytes = 128;
    const char *mode = "mpi-default";
    for (int i = 1; i < argc; i++) {
        const char *flag = argv[i];
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!strcmp(flag, "--count") && value) {
            count = strtoll(value, &end, 10);
            if (*end || count <= 0) { MPI_Finalize(); return usage(rank, "--count needs a positive integer"); }
        } else if (!strcmp(flag, "--duration-s") && value) {
            duration = strtod(value, &end);
            if (*end || !(duration > 0)) { MPI_Finalize(); return usage(rank, "--duration-s needs a positive number"); }
        } else if (!strcmp(flag, "--bytes") && value) {
            bytes = strtol(value, &end, 10);
            if (*end || bytes < MIN_BYTES || bytes > (16L << 20)) {
                MPI_Finalize();
                return usage(rank, "--bytes must be 16 .. 16777216");
            }
        } else if (!strcmp(flag, "--recv") && value) {
            mode = value;
        } else {
            MPI_Finalize();
            return usage(rank, "unknown flag or missing value");
        }
        i++;
    }
    if (size != 2) {
        if (rank == 0) fprintf(stderr, "mpi_pingpong: runs on exactly 2 ranks, not %d (mpirun -np 2)\n", size);
        MPI_Finalize();
        return 2;
    }

    unsigned char *out = malloc(bytes), *in = malloc(bytes);
    size_t capacity = duration > 0 ? 1 << 20 : (size_t)count;
    double *rtt = rank == 0 ? malloc(capacity * sizeof(double)) : NULL;
    if (!out || !in || (rank == 0 && !rtt)) {
        fprintf(stderr, "mpi_pingpong: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double user0, sys0;
    cpu_times(&user0, &sys0);
    double start = now_s();
    uint64_t done = 0;
    int failed = 0;
    uint64_t flags = 0;
    if (rank == 0) {
        for (;;) {
            double t0 = now_s();
            int more = duration > 0 ? (t0 - start < duration) : (done < (uint64_t)count);
            if (!more) break;
            fill(out, bytes, done, 0, 0);
            MPI_Send(out, (int)bytes, MPI_BYTE, 1, TAG, MPI_COMM_WORLD);
            MPI_Recv(in, (int)bytes, MPI_BYTE, 1, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            double t1 = now_s();
            if (!check(in, bytes, done, 1, &flags)) { failed = 1; break; }
            if (done == capacity) {
                capacity *= 2;
                rtt = realloc(rtt, capacity * sizeof(double));
                if (!rtt) { fprintf(stderr, "mpi_pingpong: out of memory\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
            }
            rtt[done++] = (t1 - t0) * 1e6;
        }
        fill(out, bytes, done, 0, 1);
        MPI_Send(out, (int)bytes, MPI_BYTE, 1, TAG, MPI_COMM_WORLD);
    } else {
        for (;;) {
            MPI_Recv(in, (int)bytes, MPI_BYTE, 0, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (!check(in, bytes, done, 0, &flags)) { failed = 1; break; }
            if (flags & 1) break;
            fill(out, bytes, done, 1, 0);
            MPI_Send(out, (int)bytes, MPI_BYTE, 0, TAG, MPI_COMM_WORLD);
            done++;
        }
    }
    double wall = now_s() - start, user1, sys1;
    cpu_times(&user1, &sys1);
    double user = user1 - user0, sys = sys1 - sys0, cpu = user + sys;
    if (failed) MPI_Abort(MPI_COMM_WORLD, 1);

    if (rank == 0) {
        qsort(rtt, done, sizeof(double), compare);
        double sum = 0;
        for (uint64_t i = 0; i < done; i++) sum += rtt[i];
        printf("{\"program\":\"mpi_pingpong\",\"rank\":0,\"ranks\":2,\"requested_mode\":\"%s\",\"status\":\"complete\","
               "\"work_done\":%llu,\"round_trips\":%llu,",
               mode, (unsigned long long)done, (unsigned long long)done);
        if (duration > 0) printf("\"duration_s\":%g,", duration);
        else printf("\"work_expected\":%lld,", count);
        printf("\"bytes\":%ld,\"wall_s\":%.9f,\"cpu_s\":%.6f,\"cpu_user_s\":%.6f,\"cpu_sys_s\":%.6f,"
               "\"cpu_share\":%.6f,\"rate_per_s\":%.3f",
               bytes, wall, cpu, user, sys, wall > 0 ? cpu / wall : 0.0, wall > 0 ? (double)done / wall : 0.0);
        if (done > 0)
            printf(",\"latency_of\":\"round trip\",\"rtt_p50_us\":%.3f,\"rtt_p90_us\":%.3f,\"rtt_p99_us\":%.3f,"
                   "\"rtt_mean_us\":%.3f,\"rtt_max_us\":%.3f",
                   quantile(rtt, done, 0.50), quantile(rtt, done, 0.90), quantile(rtt, done, 0.99), sum / done,
                   rtt[done - 1]);
        if (done > 0) {
            /* 10^(k/4) without libm: exact powers of ten times 10^(1/4), 10^(2/4), 10^(3/4). */
            static const double quarter[4] = {1.0, 1.7782794100389228, 3.1622776601683795, 5.6234132519034912};
            double edges[COARSE_EDGES];
            double decade = 1.0;
            for (int k = 0; k < COARSE_EDGES; k++) {
                if (k > 0 && k % 4 == 0) decade *= 10.0;
                edges[k] = decade * quarter[k % 4];
            }
            uint64_t counts[COARSE_EDGES + 1] = {0};
            for (uint64_t i = 0; i < done; i++) {
                int k = 0;
                while (k < COARSE_EDGES && rtt[i] > edges[k]) k++;
                counts[k]++;
            }
            printf(",\"rtt_histogram\":{\"upper_edges_us\":[");
            for (int k = 0; k < COARSE_EDGES; k++) printf("%s%.17g", k ? "," : "", edges[k]);
            printf("],\"counts\":[");
            for (int k = 0; k <= COARSE_EDGES; k++) printf("%s%llu", k ? "," : "", (unsigned long long)counts[k]);
            printf("]}");
        }
        printf("}\n");
        fflush(stdout);
    }
    free(out);
    free(in);
    free(rtt);
    MPI_Finalize();
    return 0;
}
