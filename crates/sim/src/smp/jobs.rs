//! Job streams for the shared-memory machine — seed `001_cc73854eda2a0ea6.txt` §5: a fixed list of jobs (E1:
//! every job at t = 0), a generated stream (E2: exponential inter-arrival times at a target load), or a trace in
//! the Standard Workload Format (SWF, <https://www.cs.huji.ac.il/labs/parallel/workload/swf.html>).
//!
//! ## Load (notes §001.5.8, [A])
//! ```text
//! offered load = Σ_jobs procs · dedicated_s / (CPUs · horizon_s)
//! mean inter-arrival = E[procs] · E[dedicated_s] / (load · CPUs)
//! ```
//! with `procs` uniform in `procs_min..=procs_max` (4–60) and `dedicated_s` (a job's run time alone, one CPU
//! per process) uniform in `dedicated_min_s..=dedicated_max_s`; a job's iterations are `dedicated_s` over its
//! app's nominal iteration ([`App::nominal_iteration`]). Arrivals are drawn until the horizon (300 s: "sized to
//! run for 5 minutes").
//!
//! ## SWF
//! One job per line, 18 whitespace-separated fields; `;` starts a comment (header lines). Used here: field 1
//! job number, 2 submit time (s), 4 run time (s), 5 allocated processors (or 8, requested processors, when
//! 5 is -1). A job whose run time or processors are -1 (unknown) is skipped, as the format's guide advises
//! for cancelled jobs; anything else malformed is an error naming the line and the field.
//!
//! ## Limits (issue 33: checked arithmetic on what a user wrote)
//! A job's run time (SWF field 4, a list's or a generator's dedicated time) is at most [`MAX_RUN_S`] (about
//! 116 days: even the shortest app's iterations then fit a `u32`), a submit time or a generator's horizon at most
//! [`MAX_SUBMIT_S`] (about 32 years: arrivals in nanoseconds stay far from `u64::MAX`), and a generator may
//! expect at most [`MAX_STREAM_JOBS`] jobs. Beyond them is an error naming the field, the value and the limit.

use super::apps::App;
use cosched_policy::{Nanos, SECONDS};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// One parallel job of a stream.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobSpec {
    /// `j<index> <app>`, unique in its stream.
    pub name: String,
    pub app: App,
    pub procs: u32,
    pub arrival_ns: Nanos,
    pub iterations: u32,
}

/// The longest run time of one job, seconds (about 116 days; at 20 ms an iteration, the shortest app's, that is
/// 5 × 10^8 iterations, well inside a `u32`).
pub const MAX_RUN_S: u64 = 10_000_000;
/// The latest submit time (or generator horizon), seconds: 10^9 s, about 32 years.
pub const MAX_SUBMIT_S: u64 = 1_000_000_000;
/// The most jobs a generated stream may expect (horizon over mean inter-arrival time).
pub const MAX_STREAM_JOBS: f64 = 100_000.0;

/// Iterations of `app` that take about `dedicated` alone (at least one; saturating at `u32::MAX`, which a run
/// time within [`MAX_RUN_S`] never reaches).
pub fn iterations_for(app: App, dedicated: Nanos) -> u32 {
    u32::try_from((dedicated / app.nominal_iteration()).max(1)).unwrap_or(u32::MAX)
}

/// A generated stream (E2).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Generator {
    /// Target offered load, 0–1.
    pub load: f64,
    /// Apps drawn from, uniformly.
    pub apps: Vec<App>,
    #[serde(default = "default_procs_min")]
    pub procs_min: u32,
    #[serde(default = "default_procs_max")]
    pub procs_max: u32,
    #[serde(default = "default_dedicated_min_s")]
    pub dedicated_min_s: f64,
    #[serde(default = "default_dedicated_max_s")]
    pub dedicated_max_s: f64,
    #[serde(default = "default_horizon_s")]
    pub horizon_s: f64,
}

fn default_procs_min() -> u32 {
    4
}
fn default_procs_max() -> u32 {
    60
}
fn default_dedicated_min_s() -> f64 {
    10.0
}
fn default_dedicated_max_s() -> f64 {
    60.0
}
fn default_horizon_s() -> f64 {
    300.0
}

impl Generator {
    /// Checks the fields against a machine of `cpus` CPUs, naming the first bad one.
    pub fn validate(&self, cpus: u32) -> Result<(), String> {
        if !(self.load.is_finite() && self.load > 0.0 && self.load <= 1.0) {
            return Err(format!(
                "load = {}: give the offered load as a fraction in (0, 1] (the seed uses about 0.2 and 0.6)",
                self.load
            ));
        }
        if self.apps.is_empty() {
            return Err("apps is empty: name at least one of cg, bt, sweep3d, mg, ft, ep".into());
        }
        if self.procs_min == 0 || self.procs_min > self.procs_max {
            return Err(format!(
                "procs_min = {}, procs_max = {}: need 1 <= procs_min <= procs_max",
                self.procs_min, self.procs_max
            ));
        }
        if self.procs_max > cpus {
            return Err(format!(
                "procs_max = {} is larger than the machine ({cpus} CPUs)",
                self.procs_max
            ));
        }
        let positive = |v: f64| v.is_finite() && v > 0.0;
        if !(positive(self.dedicated_min_s) && self.dedicated_min_s <= self.dedicated_max_s) {
            return Err(format!(
                "dedicated_min_s = {}, dedicated_max_s = {}: need 0 < min <= max",
                self.dedicated_min_s, self.dedicated_max_s
            ));
        }
        if self.dedicated_max_s > MAX_RUN_S as f64 {
            return Err(format!(
                "dedicated_max_s = {}: more than the limit of {MAX_RUN_S} s",
                self.dedicated_max_s
            ));
        }
        if !positive(self.horizon_s) {
            return Err(format!("horizon_s = {}: must be positive", self.horizon_s));
        }
        if self.horizon_s > MAX_SUBMIT_S as f64 {
            return Err(format!(
                "horizon_s = {}: more than the limit of {MAX_SUBMIT_S} s",
                self.horizon_s
            ));
        }
        // The expected number of jobs, horizon / mean gap (the same at any scale: both shrink alike).
        let expected = self.horizon_s / self.mean_gap_s(cpus, 1.0);
        if expected.is_nan() || expected > MAX_STREAM_JOBS {
            return Err(format!(
                "horizon_s = {}: at load {} on {cpus} CPUs it holds about {expected:.0} jobs, more than the limit \
                 of {MAX_STREAM_JOBS} (shorten the horizon or lengthen the jobs)",
                self.horizon_s, self.load
            ));
        }
        Ok(())
    }

    /// The mean inter-arrival time, seconds, at `scale` (see the module doc's load formula).
    fn mean_gap_s(&self, cpus: u32, scale: f64) -> f64 {
        let mean_procs = (f64::from(self.procs_min) + f64::from(self.procs_max)) / 2.0;
        let mean_dedicated = (self.dedicated_min_s + self.dedicated_max_s) / 2.0;
        mean_procs * mean_dedicated * scale / (self.load * f64::from(cpus))
    }

    /// The stream for one repetition: the same `seed` gives the same jobs, whatever the policy. `scale` shrinks
    /// every duration (jobs, gaps, horizon) alike.
    pub fn generate(&self, cpus: u32, seed: u64, scale: f64) -> Vec<JobSpec> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5c5_0001);
        // Scaled like the jobs, so a quick run keeps the same number of jobs and the same load.
        let mean_gap_s = self.mean_gap_s(cpus, scale);
        let mut jobs = Vec::new();
        let mut t = 0.0;
        loop {
            t += exponential_gap(&mut rng, mean_gap_s);
            if t > self.horizon_s * scale {
                break;
            }
            let app = self.apps[rng.random_range(0..self.apps.len())];
            let procs = rng.random_range(self.procs_min..=self.procs_max);
            let dedicated_s = rng.random_range(self.dedicated_min_s..=self.dedicated_max_s) * scale;
            jobs.push(JobSpec {
                name: format!("j{:03} {}", jobs.len(), app.name()),
                app,
                procs,
                arrival_ns: (t * SECONDS as f64) as Nanos,
                iterations: iterations_for(app, (dedicated_s * SECONDS as f64) as Nanos),
            });
        }
        jobs
    }
}

/// One inter-arrival time of a Poisson arrival process with mean `mean_gap` (any unit; the result is in the
/// same): `-mean × ln(1 - U)`, one uniform draw from `rng`. The E2 generator above and the cluster experiments'
/// `[stream]` (`crate::experiment`) both draw their arrivals with it.
pub fn exponential_gap(rng: &mut ChaCha8Rng, mean_gap: f64) -> f64 {
    let u: f64 = rng.random();
    -mean_gap * (1.0 - u).ln()
}

/// A malformed SWF line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: field {field} ({name}): {message}")]
pub struct SwfError {
    pub file: String,
    pub line: usize,
    pub field: usize,
    pub name: &'static str,
    pub message: String,
}

/// One SWF job, the fields used here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SwfJob {
    pub number: u64,
    pub submit_s: u64,
    pub run_s: u64,
    pub procs: u32,
}

/// The 18 SWF fields, by position (1-based), as the format names them.
const SWF_FIELDS: [&str; 18] = [
    "job number",
    "submit time",
    "wait time",
    "run time",
    "allocated processors",
    "average CPU time",
    "used memory",
    "requested processors",
    "requested time",
    "requested memory",
    "status",
    "user id",
    "group id",
    "executable",
    "queue",
    "partition",
    "preceding job",
    "think time",
];

/// Parses an SWF trace: every job with a known run time and processor count, in file order. `file` names the
/// source in errors.
pub fn parse_swf(text: &str, file: &str) -> Result<Vec<SwfJob>, SwfError> {
    let mut jobs = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let content = raw.split(';').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        let fields: Vec<&str> = content.split_whitespace().collect();
        let error = |field: usize, message: String| SwfError {
            file: file.to_string(),
            line,
            field,
            name: SWF_FIELDS[field - 1],
            message,
        };
        if fields.len() != SWF_FIELDS.len() {
            let field = (fields.len() + 1).min(SWF_FIELDS.len());
            return Err(error(
                field,
                format!(
                    "a job line has {} fields, this one {}",
                    SWF_FIELDS.len(),
                    fields.len()
                ),
            ));
        }
        // Every field is an integer, -1 meaning unknown (the format allows decimals in a few; none used here).
        let mut values = [0i64; 18];
        for (k, text) in fields.iter().enumerate() {
            values[k] = match text.parse::<i64>() {
                Ok(v) if v >= -1 => v,
                Ok(v) => {
                    return Err(error(
                        k + 1,
                        format!("{v} is below -1 (the 'unknown' value)"),
                    ))
                }
                Err(_) => match text.parse::<f64>() {
                    Ok(v) if v.is_finite() && v >= -1.0 => v.round() as i64,
                    _ => return Err(error(k + 1, format!("'{text}' is not a number"))),
                },
            };
        }
        let procs = if values[4] >= 0 { values[4] } else { values[7] };
        if values[3] < 0 || procs <= 0 {
            continue;
        }
        if values[1] < 0 {
            return Err(error(2, "the submit time is unknown (-1)".into()));
        }
        if values[1] as u64 > MAX_SUBMIT_S {
            return Err(error(
                2,
                format!("{} s is more than the limit of {MAX_SUBMIT_S} s", values[1]),
            ));
        }
        if values[3] as u64 > MAX_RUN_S {
            return Err(error(
                4,
                format!("{} s is more than the limit of {MAX_RUN_S} s", values[3]),
            ));
        }
        let procs = u32::try_from(procs).map_err(|_| error(5, format!("{procs} processors")))?;
        jobs.push(SwfJob {
            number: values[0].max(0) as u64,
            submit_s: values[1] as u64,
            run_s: values[3] as u64,
            procs,
        });
    }
    Ok(jobs)
}

/// An SWF trace as a stream on a machine of `cpus` CPUs: submit times relative to the first job's, apps taken
/// round-robin from `apps` (SWF says nothing of communication), each job's iterations sized to its run time
/// (× `scale`). A job wider than the machine is an error naming its line's job number.
pub fn swf_stream(
    jobs: &[SwfJob],
    apps: &[App],
    cpus: u32,
    scale: f64,
) -> Result<Vec<JobSpec>, String> {
    if apps.is_empty() {
        return Err("apps is empty: name the apps SWF jobs are mapped to".into());
    }
    let first = jobs.iter().map(|j| j.submit_s).min().unwrap_or(0);
    jobs.iter()
        .enumerate()
        .map(|(i, j)| {
            if j.procs > cpus {
                return Err(format!(
                    "SWF job {} asks for {} processors; the machine has {cpus}",
                    j.number, j.procs
                ));
            }
            let app = apps[i % apps.len()];
            let dedicated = (j.run_s as f64 * scale * SECONDS as f64) as Nanos;
            Ok(JobSpec {
                name: format!("j{:03} {}", i, app.name()),
                app,
                procs: j.procs,
                arrival_ns: ((j.submit_s - first) as f64 * scale * SECONDS as f64) as Nanos,
                iterations: iterations_for(app, dedicated),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = "1 0 5 120 16 -1 -1 16 200 -1 1 3 1 -1 1 -1 -1 -1";

    #[test]
    fn swf_reads_jobs_skips_comments_and_unknown_ones() {
        let text = format!(
            "; Version: 2.2\n;  Computer: test\n{LINE}\n\n2 30 0 60 -1 -1 -1 8 60 -1 1 3 1 -1 1 -1 -1 -1 ; requested only\n\
             3 40 0 -1 4 -1 -1 4 60 -1 5 3 1 -1 1 -1 -1 -1\n"
        );
        let jobs = parse_swf(&text, "t.swf").unwrap();
        assert_eq!(
            jobs,
            vec![
                SwfJob {
                    number: 1,
                    submit_s: 0,
                    run_s: 120,
                    procs: 16
                },
                SwfJob {
                    number: 2,
                    submit_s: 30,
                    run_s: 60,
                    procs: 8
                },
            ]
        );
    }

    #[test]
    fn a_short_line_names_the_line_and_the_first_missing_field() {
        let err = parse_swf(&format!("{LINE}\n1 0 5 120\n"), "t.swf").unwrap_err();
        assert_eq!(
            (err.line, err.field, err.name),
            (2, 5, "allocated processors")
        );
        assert_eq!(
            err.to_string(),
            "t.swf:2: field 5 (allocated processors): a job line has 18 fields, this one 4"
        );
    }

    #[test]
    fn a_bad_number_names_its_field() {
        let bad = LINE.replacen(" 120 ", " 12x ", 1);
        let err = parse_swf(&bad, "t.swf").unwrap_err();
        assert_eq!((err.line, err.field, err.name), (1, 4, "run time"));
        assert!(err.message.contains("'12x' is not a number"), "{err}");
        let negative = LINE.replacen("1 0 5", "1 -7 5", 1);
        let err = parse_swf(&negative, "t.swf").unwrap_err();
        assert_eq!((err.field, err.name), (2, "submit time"));
        let unknown_submit = LINE.replacen("1 0 5", "1 -1 5", 1);
        assert_eq!(parse_swf(&unknown_submit, "t.swf").unwrap_err().field, 2);
        let long = format!("{LINE} 7");
        assert!(parse_swf(&long, "t.swf")
            .unwrap_err()
            .message
            .contains("this one 19"));
    }

    #[test]
    fn swf_stream_maps_apps_round_robin_and_refuses_a_too_wide_job() {
        let jobs = parse_swf(
            &format!("{LINE}\n2 100 0 60 8 -1 -1 8 60 -1 1 3 1 -1 1 -1 -1 -1\n"),
            "t.swf",
        )
        .unwrap();
        let stream = swf_stream(&jobs, &[App::Cg, App::Ep], 64, 1.0).unwrap();
        assert_eq!(stream[0].app, App::Cg);
        assert_eq!(stream[1].app, App::Ep);
        assert_eq!(stream[1].arrival_ns, 100 * SECONDS);
        assert_eq!(stream[1].iterations, iterations_for(App::Ep, 60 * SECONDS));
        let err = swf_stream(&jobs, &[App::Cg], 12, 1.0).unwrap_err();
        assert!(
            err.contains("SWF job 1 asks for 16 processors; the machine has 12"),
            "{err}"
        );
    }

    #[test]
    fn generated_streams_hit_the_offered_load_and_repeat_by_seed() {
        let g = Generator {
            load: 0.6,
            apps: vec![App::Cg, App::Bt],
            procs_min: 4,
            procs_max: 60,
            dedicated_min_s: 10.0,
            dedicated_max_s: 60.0,
            horizon_s: 3000.0,
        };
        g.validate(64).unwrap();
        let jobs = g.generate(64, 7, 1.0);
        assert_eq!(jobs, g.generate(64, 7, 1.0));
        assert_ne!(jobs, g.generate(64, 8, 1.0));
        let cpu_s: f64 = jobs
            .iter()
            .map(|j| {
                f64::from(j.procs) * f64::from(j.iterations) * j.app.nominal_iteration() as f64
                    / 1e9
            })
            .sum();
        let load = cpu_s / (64.0 * 3000.0);
        assert!((0.45..0.75).contains(&load), "offered load {load}");
        assert!(jobs.windows(2).all(|w| w[0].arrival_ns <= w[1].arrival_ns));
    }

    #[test]
    fn overflowing_swf_times_are_refused_by_line_and_field() {
        // Before issue 33 a run time of i64::MAX s saturated to u64::MAX ns and its iterations wrapped in `as u32`.
        let long_run = LINE.replacen(" 120 ", " 9223372036854775807 ", 1);
        let err = parse_swf(&long_run, "t.swf").unwrap_err();
        assert_eq!((err.line, err.field, err.name), (1, 4, "run time"));
        assert_eq!(
            err.message,
            "9223372036854775807 s is more than the limit of 10000000 s"
        );
        let late = format!("{LINE}\n{}", LINE.replacen("1 0 5", "2 1000000001 5", 1));
        let err = parse_swf(&late, "t.swf").unwrap_err();
        assert_eq!((err.line, err.field, err.name), (2, 2, "submit time"));
        assert!(err
            .message
            .contains("1000000001 s is more than the limit of 1000000000 s"));
        // A decimal field far beyond i64 saturates and is refused the same way, not wrapped.
        let huge = LINE.replacen(" 120 ", " 1e300 ", 1);
        assert_eq!(parse_swf(&huge, "t.swf").unwrap_err().field, 4);
        // At the limits, every app's iterations fit a u32 and arrivals stay far from u64::MAX ns.
        let edge = LINE.replacen("1 0 5 120", &format!("1 {MAX_SUBMIT_S} 5 {MAX_RUN_S}"), 1);
        let first = LINE.replacen(" 120 ", " 1 ", 1);
        let jobs = parse_swf(&format!("{first}\n{edge}"), "t.swf").unwrap();
        for app in [App::Cg, App::Bt, App::Sweep3d, App::Mg, App::Ft, App::Ep] {
            let stream = swf_stream(&jobs, &[app], 64, 1.0).unwrap();
            assert!(stream[1].iterations < u32::MAX, "{app:?}");
            assert_eq!(stream[1].arrival_ns, MAX_SUBMIT_S * SECONDS);
        }
        assert_eq!(iterations_for(App::Cg, u64::MAX), u32::MAX);
    }

    #[test]
    fn a_generator_that_would_never_end_or_wrap_is_refused() {
        let g = Generator {
            load: 1.0,
            apps: vec![App::Cg],
            procs_min: 1,
            procs_max: 1,
            dedicated_min_s: 1e-9,
            dedicated_max_s: 1e-9,
            horizon_s: 300.0,
        };
        // 300 s of 1 ns jobs at full load on 64 CPUs: about 1.9 × 10^13 jobs.
        let err = g.validate(64).unwrap_err();
        assert!(
            err.starts_with("horizon_s = 300: at load 1 on 64 CPUs it holds about"),
            "{err}"
        );
        assert!(err.contains("more than the limit of 100000"), "{err}");
        let err = Generator {
            dedicated_max_s: 1e300,
            ..g.clone()
        }
        .validate(64)
        .unwrap_err();
        assert!(err.contains("more than the limit of 10000000 s"), "{err}");
        let err = Generator {
            horizon_s: f64::MAX,
            ..g.clone()
        }
        .validate(64)
        .unwrap_err();
        assert!(
            err.contains("horizon_s") && err.contains("more than the limit of 1000000000 s"),
            "{err}"
        );
    }

    #[test]
    fn generator_refuses_bad_fields_by_name() {
        let mut g = Generator {
            load: 1.5,
            apps: vec![App::Cg],
            procs_min: 4,
            procs_max: 60,
            dedicated_min_s: 10.0,
            dedicated_max_s: 60.0,
            horizon_s: 300.0,
        };
        assert!(g.validate(64).unwrap_err().starts_with("load = 1.5"));
        g.load = 0.2;
        g.procs_max = 100;
        assert!(g
            .validate(64)
            .unwrap_err()
            .contains("larger than the machine"));
    }
}
