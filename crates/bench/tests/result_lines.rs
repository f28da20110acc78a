//! The result lines the programs print today, kept in `tests/data/result-lines.jsonl` (one line each, captured
//! from the built programs: the root and a follower of pingpong, the roots of barrier, stencil,
//! masterslave, alltoall and multigrid, calcula complete and stopped by SIGTERM, local, and
//! `mpi/mpi_pingpong.c` by count and by duration), read with [`ResultLine::parse`], the lab's reader. A change to `ResultLine` that would stop the lab
//! reading one of them fails here. (`tests/programs.rs` reads every line the programs print in its runs the same
//! way.)

use cosched_bench::result::{ResultLine, Status};

const LINES: &str = include_str!("data/result-lines.jsonl");

fn lines() -> Vec<ResultLine> {
    LINES
        .lines()
        .map(|line| ResultLine::parse(line).unwrap_or_else(|e| panic!("{e:#}")))
        .collect()
}

#[test]
fn a_line_of_every_program_parses() {
    let lines = lines();
    let mut programs: Vec<&str> = lines.iter().map(|l| l.program.as_str()).collect();
    programs.sort_unstable();
    programs.dedup();
    assert_eq!(
        programs,
        [
            "alltoall",
            "barrier",
            "calcula",
            "local",
            "masterslave",
            "mpi_pingpong",
            "multigrid",
            "pingpong",
            "stencil"
        ]
    );
    for line in &lines {
        assert!(line.work_done > 0, "{line:?}");
        assert!(line.wall_s > 0.0, "{line:?}");
    }
}

#[test]
fn the_fields_the_lab_uses_read_as_written() {
    let lines = lines();
    // The pingpong root: 20 round trips, its percentiles, histogram and coscheduled time.
    let root = &lines[0];
    assert_eq!((root.program.as_str(), root.rank), ("pingpong", 0));
    assert_eq!(root.status, Status::Complete);
    assert_eq!(root.work_done, 20);
    assert_eq!(root.work_expected, Some(20));
    assert_eq!(root.mode.as_deref(), Some("spin-block:1600"));
    assert!(root.rtt_p50_us.unwrap() <= root.rtt_p99_us.unwrap());
    let histogram = root.rtt_histogram.as_ref().unwrap();
    assert_eq!(histogram.counts.iter().sum::<u64>(), 20);
    assert!(root.rtt_under_100us_s.is_some());
    // The follower reports no latency; its own fields are in `extra`.
    let follower = &lines[4];
    assert_eq!((follower.program.as_str(), follower.rank), ("pingpong", 1));
    assert_eq!(follower.rtt_p50_us, None);
    assert_eq!(follower.receives, Some(21));
    assert_eq!(follower.extra["round_trips"], 20);
    // The MPI line is written by hand in C: its own names (`requested_mode`) land in `extra`.
    let mpi: Vec<&ResultLine> = lines
        .iter()
        .filter(|l| l.program == "mpi_pingpong")
        .collect();
    assert_eq!(mpi[0].extra["requested_mode"], "spin-only");
    assert_eq!(mpi[0].mode, None);
    assert_eq!(mpi[0].work_expected, Some(20));
    assert_eq!(
        mpi[1].work_expected, None,
        "a duration-bound run asks for no count"
    );
    assert_eq!(
        mpi[0]
            .rtt_histogram
            .as_ref()
            .unwrap()
            .counts
            .iter()
            .sum::<u64>(),
        20
    );
    let stopped = lines.last().unwrap();
    assert_eq!(stopped.program, "calcula");
    assert_eq!(stopped.status, Status::Stopped);
}

#[test]
fn every_line_writes_back_to_the_same_line() {
    for line in lines() {
        assert_eq!(ResultLine::parse(&line.to_json()).unwrap(), line);
    }
}
