//! What DYNAMICQ reads about the node (seed `004_3903357666129396.txt`, §2): the L2 cache miss rate of the last
//! epoch, and whether an interactive user is present.
//!
//! ## Problem
//! Algorithm 1 doubles a task's quantum when the node's miss rate `mr = L2 misses / L1 misses` is above MAX_MISS
//! or rose since the epoch before, and resets every quantum to the default while an interactive user is on the
//! node. The seed read the miss rate from the Pentium's performance counters and knew its local user from the
//! experiment. A machine today may have no hardware counters at all (this project's VMs: `perf stat` says "not
//! supported"), and no one tells the agent who is interactive.
//!
//! ## Approach
//! - **Miss rate** ([`MissRateSource`]): `perf` opens, on every online CPU and for every task, the generic
//!   hardware cache events L1D read misses and LL (last-level) read misses (`perf_event_open` through the
//!   `perf-event2` crate) and gives `Δ LL / Δ L1D` summed over the CPUs since the last reading — the seed's
//!   L2 / L1 ratio on a machine whose last level is the L2 or, on a deeper hierarchy, the ratio that decides
//!   whether a switch costs a refill from memory. `file:PATH` reads a fraction from a file at each epoch (an
//!   injected source: tests, replaying a measured trace, a counter read some other way). `none`, and `auto`
//!   where no counter opens, give no reading; what the policy then assumes is the policy's (stated in
//!   [`crate::policy::dynamicq`]).
//! - **Interactive user** ([`InteractiveDetector`]): present when any terminal (`/dev/pts/*`, `/dev/tty<N>`)
//!   was read within `--interactive-idle-s` (the kernel moves a tty's access time on input, at most every 8 s:
//!   what `w` shows as IDLE), when an input device's interrupt count (keyboard, mouse, HID lines of
//!   `/proc/interrupts`) moved within that window, or while a process named by `--interactive-comm` lives (the
//!   seed's `local` benchmark, an X server, a remote desktop).
//!
//! Both are read once per DYNAMICQ epoch (hundreds of ms), never on an event path.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// What DYNAMICQ reads at each epoch. The real one is [`Sensors`]; tests inject their own.
pub trait NodeSensors {
    /// `mr` of the interval since the last call, a fraction in 0..=1; `None`: no source, or nothing counted.
    fn miss_rate(&mut self) -> Option<f64>;
    /// Where the miss rate comes from, for the start-up line and the statistics (`perf`, `file:PATH`,
    /// `none (why)`).
    fn miss_source(&self) -> String;
    /// Whether an interactive user is present on the node now.
    fn interactive_user(&mut self) -> bool;
}

/// `--miss-rate-source`, as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MissRateSpec {
    /// Hardware counters where they open, else no reading.
    Auto,
    /// Hardware counters, or an error.
    Perf,
    /// A file holding a fraction.
    File(PathBuf),
    /// No reading.
    None,
}

impl std::str::FromStr for MissRateSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(MissRateSpec::Auto),
            "perf" => Ok(MissRateSpec::Perf),
            "none" => Ok(MissRateSpec::None),
            _ => match s.strip_prefix("file:") {
                Some(path) if !path.is_empty() => Ok(MissRateSpec::File(PathBuf::from(path))),
                _ => Err(format!(
                    "'{s}' is not a miss-rate source: use auto, perf, none or file:PATH"
                )),
            },
        }
    }
}

/// Where the miss rate is read from, opened.
pub enum MissRateSource {
    Perf(PerfCacheCounters),
    File(PathBuf),
    /// No reading, and why.
    None(String),
}

impl MissRateSource {
    /// Opens what `spec` names. `perf` where no counter opens is an error that says what to use instead;
    /// `auto` then falls back to no reading and says why.
    pub fn open(spec: &MissRateSpec) -> anyhow::Result<MissRateSource> {
        Ok(match spec {
            MissRateSpec::Auto => match PerfCacheCounters::open() {
                Ok(c) => MissRateSource::Perf(c),
                Err(e) => MissRateSource::None(format!("no hardware cache counters: {e}")),
            },
            MissRateSpec::Perf => MissRateSource::Perf(PerfCacheCounters::open().map_err(|e| {
                anyhow::anyhow!(
                    "--miss-rate-source perf: the hardware cache counters do not open ({e}); this machine may \
                     have none (a VM often has none): use auto, none, or file:PATH"
                )
            })?),
            MissRateSpec::File(path) => MissRateSource::File(path.clone()),
            MissRateSpec::None => MissRateSource::None("--miss-rate-source none".into()),
        })
    }

    /// The miss rate since the last reading.
    pub fn read(&mut self) -> Option<f64> {
        match self {
            MissRateSource::Perf(c) => c.miss_rate(),
            MissRateSource::File(path) => read_fraction(path),
            MissRateSource::None(_) => None,
        }
    }

    pub fn describe(&self) -> String {
        match self {
            MissRateSource::Perf(c) => format!("perf ({} CPUs)", c.l1d.len()),
            MissRateSource::File(path) => format!("file:{}", path.display()),
            MissRateSource::None(why) => format!("none ({why})"),
        }
    }
}

/// A fraction in 0..=1 written in a file (surrounding white space allowed); anything else is no reading.
fn read_fraction(path: &Path) -> Option<f64> {
    let v: f64 = std::fs::read_to_string(path).ok()?.trim().parse().ok()?;
    (v.is_finite() && (0.0..=1.0).contains(&v)).then_some(v)
}

/// L1D and LL read-miss counters on every online CPU, counting every task.
pub struct PerfCacheCounters {
    l1d: Vec<perf_event::Counter>,
    ll: Vec<perf_event::Counter>,
    /// The totals at the last reading: (L1D misses, LL misses).
    last: (u64, u64),
}

impl PerfCacheCounters {
    pub fn open() -> std::io::Result<PerfCacheCounters> {
        use perf_event::events::{Cache, CacheId, CacheOp, CacheResult};
        let event = |which| Cache {
            which,
            operation: CacheOp::READ,
            result: CacheResult::MISS,
        };
        let (mut l1d, mut ll) = (Vec::new(), Vec::new());
        for cpu in online_cpus() {
            for (which, out) in [(CacheId::L1D, &mut l1d), (CacheId::LL, &mut ll)] {
                let mut counter = perf_event::Builder::new(event(which))
                    .one_cpu(cpu)
                    .any_pid()
                    .build()
                    .map_err(|e| match e.raw_os_error() {
                        // The kernel's answer for a generic event this CPU (or hypervisor) does not count.
                        Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) => std::io::Error::other(
                            format!("the kernel counts no {which:?} read misses on this CPU ({e})"),
                        ),
                        _ => e,
                    })?;
                counter.enable()?;
                out.push(counter);
            }
        }
        if l1d.is_empty() {
            return Err(std::io::Error::other("no online CPU found"));
        }
        let mut counters = PerfCacheCounters {
            l1d,
            ll,
            last: (0, 0),
        };
        counters.last = counters.totals();
        Ok(counters)
    }

    fn totals(&mut self) -> (u64, u64) {
        let sum =
            |cs: &mut Vec<perf_event::Counter>| cs.iter_mut().filter_map(|c| c.read().ok()).sum();
        (sum(&mut self.l1d), sum(&mut self.ll))
    }

    fn miss_rate(&mut self) -> Option<f64> {
        let now = self.totals();
        let (l1d, ll) = (
            now.0.saturating_sub(self.last.0),
            now.1.saturating_sub(self.last.1),
        );
        self.last = now;
        (l1d > 0).then(|| (ll as f64 / l1d as f64).min(1.0))
    }
}

/// The online CPUs, from `/sys/devices/system/cpu/online` (`0-3,5`); CPU 0 alone when unreadable.
fn online_cpus() -> Vec<usize> {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .map(|s| parse_cpu_list(s.trim()))
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| vec![0])
}

/// A kernel CPU list (`0-3,5`) as CPU numbers; a malformed part is skipped.
fn parse_cpu_list(list: &str) -> Vec<usize> {
    list.split(',')
        .flat_map(|part| {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            match (a.trim().parse::<usize>(), b.trim().parse::<usize>()) {
                (Ok(a), Ok(b)) if a <= b => (a..=b).collect(),
                _ => Vec::new(),
            }
        })
        .collect()
}

/// How an interactive user is recognised.
#[derive(Clone, Debug)]
pub struct InteractiveConfig {
    /// A terminal read or an input interrupt within this long means a user is there (`None`: neither counts).
    pub idle: Option<Duration>,
    /// Processes whose presence means a user is there, by `comm` (the first 15 bytes of the program's name).
    pub comms: Vec<String>,
}

/// Recognises an interactive user from terminals, input interrupts and named processes.
pub struct InteractiveDetector {
    cfg: InteractiveConfig,
    /// Where terminals are looked for (`/dev/pts` and `/dev`; tests use their own).
    tty_dirs: Vec<PathBuf>,
    /// Where processes are looked for (`/proc`).
    proc_dir: PathBuf,
    /// The input interrupts' total at the last look, and when it last moved.
    input: Option<(u64, SystemTime)>,
}

impl InteractiveDetector {
    pub fn new(cfg: InteractiveConfig) -> InteractiveDetector {
        InteractiveDetector {
            cfg,
            tty_dirs: vec![PathBuf::from("/dev/pts"), PathBuf::from("/dev")],
            proc_dir: PathBuf::from("/proc"),
            input: None,
        }
    }

    /// Whether a user is present at `now`.
    pub fn present(&mut self, now: SystemTime) -> bool {
        if let Some(idle) = self.cfg.idle {
            if self.tty_read_within(now, idle) || self.input_moved_within(now, idle) {
                return true;
            }
        }
        !self.cfg.comms.is_empty() && self.named_process_lives()
    }

    fn tty_read_within(&self, now: SystemTime, idle: Duration) -> bool {
        self.tty_dirs.iter().any(|dir| {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return false;
            };
            entries.flatten().any(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                let terminal = dir.ends_with("pts") && name.parse::<u32>().is_ok()
                    || name
                        .strip_prefix("tty")
                        .is_some_and(|n| !n.is_empty() && n.parse::<u32>().is_ok());
                terminal
                    && e.metadata()
                        .and_then(|m| m.accessed())
                        .is_ok_and(|read| now.duration_since(read).unwrap_or_default() <= idle)
            })
        })
    }

    fn input_moved_within(&mut self, now: SystemTime, idle: Duration) -> bool {
        let Some(total) = std::fs::read_to_string(self.proc_dir.join("interrupts"))
            .ok()
            .map(|t| input_interrupts(&t))
        else {
            return false;
        };
        let moved_at = match self.input {
            Some((last, at)) if last == total => at,
            // The first look sets the baseline: a count seen once says nothing about when it moved.
            None => SystemTime::UNIX_EPOCH,
            Some(_) => now,
        };
        self.input = Some((total, moved_at));
        now.duration_since(moved_at).unwrap_or_default() <= idle
    }

    fn named_process_lives(&self) -> bool {
        let Ok(entries) = std::fs::read_dir(&self.proc_dir) else {
            return false;
        };
        entries.flatten().any(|e| {
            e.file_name().to_string_lossy().parse::<u32>().is_ok()
                && std::fs::read_to_string(e.path().join("comm"))
                    .is_ok_and(|c| self.cfg.comms.iter().any(|n| comm_matches(n, c.trim_end())))
        })
    }
}

/// Whether `comm` (at most 15 bytes: the kernel truncates it) is the program `name`.
fn comm_matches(name: &str, comm: &str) -> bool {
    let name = name.as_bytes();
    name[..name.len().min(15)] == *comm.as_bytes()
}

/// The total of the input devices' interrupt lines in `/proc/interrupts` (keyboard and mouse controllers,
/// HID devices): per-CPU counts summed.
fn input_interrupts(text: &str) -> u64 {
    text.lines()
        .filter(|l| {
            let l = l.to_ascii_lowercase();
            // Not "input": virtio's network queues are named `virtioN-input.M`.
            ["i8042", "keyboard", "mouse", "hid"]
                .iter()
                .any(|w| l.contains(w))
        })
        .map(|l| {
            l.split_whitespace()
                .skip(1)
                .map_while(|f| f.parse::<u64>().ok())
                .sum::<u64>()
        })
        .sum()
}

/// The agent's sensors: a miss-rate source and an interactive detector.
pub struct Sensors {
    pub miss: MissRateSource,
    pub interactive: InteractiveDetector,
}

impl NodeSensors for Sensors {
    fn miss_rate(&mut self) -> Option<f64> {
        self.miss.read()
    }
    fn miss_source(&self) -> String {
        self.miss.describe()
    }
    fn interactive_user(&mut self) -> bool {
        self.interactive.present(SystemTime::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_miss_rate_source_is_parsed_or_refused_with_the_valid_ones() {
        assert_eq!("auto".parse(), Ok(MissRateSpec::Auto));
        assert_eq!(
            "file:/tmp/mr".parse(),
            Ok(MissRateSpec::File("/tmp/mr".into()))
        );
        let err = "pmu".parse::<MissRateSpec>().unwrap_err();
        assert!(err.contains("auto, perf, none or file:PATH"), "{err}");
        assert!("file:".parse::<MissRateSpec>().is_err());
    }

    #[test]
    fn a_file_source_reads_a_fraction_and_nothing_else() {
        let dir = std::env::temp_dir().join(format!("cosched-node-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("mr");
        let mut src = MissRateSource::open(&MissRateSpec::File(path.clone())).unwrap();
        assert_eq!(src.read(), None, "no file yet");
        std::fs::write(&path, " 0.12\n").unwrap();
        assert_eq!(src.read(), Some(0.12));
        std::fs::write(&path, "1.5").unwrap();
        assert_eq!(src.read(), None, "not a fraction");
        std::fs::write(&path, "lots").unwrap();
        assert_eq!(src.read(), None);
        assert_eq!(src.describe(), format!("file:{}", path.display()));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn auto_without_counters_gives_no_reading_and_says_why_while_perf_is_an_error() {
        // On a machine with hardware cache counters both open; elsewhere (this project's VMs) auto says why
        // it has no reading and perf refuses with what to use instead.
        match PerfCacheCounters::open() {
            Ok(_) => {
                assert!(matches!(
                    MissRateSource::open(&MissRateSpec::Auto).unwrap(),
                    MissRateSource::Perf(_)
                ));
            }
            Err(_) => {
                let mut auto = MissRateSource::open(&MissRateSpec::Auto).unwrap();
                assert_eq!(auto.read(), None);
                assert!(auto
                    .describe()
                    .starts_with("none (no hardware cache counters"));
                let err = MissRateSource::open(&MissRateSpec::Perf)
                    .err()
                    .unwrap()
                    .to_string();
                assert!(err.contains("use auto, none, or file:PATH"), "{err}");
            }
        }
    }

    #[test]
    fn cpu_lists_are_read_as_the_kernel_writes_them() {
        assert_eq!(parse_cpu_list("0-3,5"), vec![0, 1, 2, 3, 5]);
        assert_eq!(parse_cpu_list("0"), vec![0]);
        assert_eq!(parse_cpu_list("x,2"), vec![2]);
    }

    #[test]
    fn input_interrupts_sum_the_keyboard_mouse_and_hid_lines_only() {
        let text = "           CPU0       CPU1\n  \
                    1:         10          5   IO-APIC   1-edge      i8042\n \
                    12:          3          4   IO-APIC  12-edge      i8042\n \
                    24:       9000       8000   PCI-MSI 512000-edge      virtio0-input.0\n \
                    30:        100        200   PCI-MSI 1-edge      usbhid\n \
                    NMI:          0          0   Non-maskable interrupts\n";
        // virtio0-input.0 is a network queue, not an input device.
        assert_eq!(input_interrupts(text), 15 + 7 + 300);
        assert_eq!(
            input_interrupts("           CPU0\n  0:  5  IO-APIC timer\n"),
            0
        );
    }

    fn detector(dir: &Path, idle_s: Option<u64>, comms: &[&str]) -> InteractiveDetector {
        InteractiveDetector {
            cfg: InteractiveConfig {
                idle: idle_s.map(Duration::from_secs),
                comms: comms.iter().map(|s| s.to_string()).collect(),
            },
            tty_dirs: vec![dir.join("pts"), dir.join("dev")],
            proc_dir: dir.join("proc"),
            input: None,
        }
    }

    #[test]
    fn a_terminal_read_within_the_idle_time_means_a_user_is_present() {
        let dir = std::env::temp_dir().join(format!("cosched-tty-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("pts")).unwrap();
        std::fs::create_dir_all(dir.join("dev")).unwrap();
        std::fs::write(dir.join("pts/3"), "").unwrap();
        std::fs::write(dir.join("dev/ttyS0"), "").unwrap(); // a serial line: not a tty<N>
        let set_read = |path: &Path, at: SystemTime| {
            let f = std::fs::File::options().write(true).open(path).unwrap();
            f.set_times(std::fs::FileTimes::new().set_accessed(at))
                .unwrap();
        };
        let now = SystemTime::now();
        set_read(&dir.join("pts/3"), now - Duration::from_secs(120));
        set_read(&dir.join("dev/ttyS0"), now);
        let mut d = detector(&dir, Some(60), &[]);
        assert!(!d.present(now), "read 120 s ago, idle limit 60 s");
        set_read(&dir.join("pts/3"), now - Duration::from_secs(30));
        assert!(d.present(now));
        let mut off = detector(&dir, None, &[]);
        assert!(!off.present(now), "terminals not looked at");
        std::fs::write(dir.join("dev/tty2"), "").unwrap();
        set_read(&dir.join("dev/tty2"), now);
        set_read(&dir.join("pts/3"), now - Duration::from_secs(120));
        assert!(d.present(now), "a virtual console read now");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn input_interrupts_that_move_mean_a_user_until_the_idle_time_passes() {
        let dir = std::env::temp_dir().join(format!("cosched-irq-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("proc")).unwrap();
        let irqs = |n: u64| {
            std::fs::write(
                dir.join("proc/interrupts"),
                format!("   CPU0\n  1:  {n}  IO-APIC 1-edge i8042\n"),
            )
            .unwrap()
        };
        let mut d = detector(&dir, Some(60), &[]);
        let t0 = SystemTime::now();
        irqs(10);
        assert!(!d.present(t0), "the first look is only a baseline");
        assert!(!d.present(t0 + Duration::from_secs(1)), "no movement");
        irqs(11);
        assert!(d.present(t0 + Duration::from_secs(2)), "a key was pressed");
        assert!(d.present(t0 + Duration::from_secs(50)));
        assert!(!d.present(t0 + Duration::from_secs(63)), "idle for 61 s");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_named_process_means_a_user_while_it_lives() {
        let dir = std::env::temp_dir().join(format!("cosched-comm-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("proc/412")).unwrap();
        std::fs::write(dir.join("proc/412/comm"), "cosched-local\n").unwrap();
        let now = SystemTime::now();
        assert!(detector(&dir, None, &["cosched-local"]).present(now));
        assert!(!detector(&dir, None, &["Xorg"]).present(now));
        // Names longer than comm's 15 bytes match their truncation.
        std::fs::write(dir.join("proc/412/comm"), "a-long-program-\n").unwrap();
        assert!(detector(&dir, None, &["a-long-program-name"]).present(now));
        std::fs::remove_dir_all(dir.join("proc/412")).unwrap();
        assert!(!detector(&dir, None, &["a-long-program-name"]).present(now));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
