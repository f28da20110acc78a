//! The actuator: every change the agent makes to a thread's scheduling attributes — the `SCHED_FIFO` boost
//! window, a nice level, a custom slice (`sched_runtime`), its CPU affinity — each guarded by the guardian and
//! by a pidfd.
//!
//! ## Problem
//! A policy asks for a boost, a nice level or a slice; the change must be undone whatever happens to the agent
//! (the guardian, [`crate::guardian`]), must never touch a stranger that reused the tid (a pidfd,
//! [`crate::sched::Target`]), and must never lower a thread that is real-time by its own choice.
//!
//! ## Approach
//! [`attributes`] computes, from a thread's own attributes and the mode the policy wants, the one `sched_attr`
//! to write (pure, unit-tested). [`Actuate`] carries it out: [`SchedActuator`] records the change in a guardian
//! slot *before* the `sched_setattr` (and reverts the slot if the call fails), and releases the slot after
//! restoring. Tests use their own [`Actuate`] that only records what it was asked.
//!
//! ## Terminology
//! - `orig`: the thread's own attributes, read when the agent adopted it.
//! - `want`: what the thread should have now (`SCHED_FIFO` at `--rt-prio`, or `orig` at another nice level or
//!   with another slice).
//! - slot: a guardian table entry holding `want` and `orig` (and the CPU masks) while the thread differs from
//!   its own.

use crate::autogroup::{self, Autogroup};
use crate::cpu_cgroup::{self, CpuCgroup};
use crate::guardian::{Guardian, SlotId};
use crate::sched::{self, CpuMask, SchedAttr, SchedError, Target};
use crate::tracker::Mode;
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

/// Why a change was not carried out.
#[derive(Debug, thiserror::Error)]
pub enum ActError {
    #[error(transparent)]
    Sched(#[from] SchedError),
    #[error(
        "the guardian table is full ({} slots); the change of thread {tid} was skipped",
        crate::guardian::SLOTS
    )]
    GuardianFull { tid: u32 },
    #[error("thread {tid} has no handle (it was never adopted, or it exited)")]
    Unknown { tid: u32 },
    #[error("the autogroup of process {pid}: {err}")]
    Autogroup { pid: u32, err: std::io::Error },
    #[error("the cpu cgroup {}: {err}", dir.display())]
    Cgroup {
        dir: std::path::PathBuf,
        err: std::io::Error,
    },
    #[error(
        "the guardian table is full ({} slots); the autogroup of job {job} was left alone",
        crate::guardian::SLOTS
    )]
    GuardianFullGroup { job: u64 },
}

impl ActError {
    /// The thread exited: nothing was changed, and nothing is wrong.
    pub fn gone(&self) -> bool {
        match self {
            ActError::Sched(SchedError::Gone { .. }) => true,
            ActError::Autogroup { err, .. } | ActError::Cgroup { err, .. } => {
                err.kind() == std::io::ErrorKind::NotFound
                    || err.raw_os_error() == Some(libc::ESRCH)
            }
            _ => false,
        }
    }
}

/// Carries out attribute changes: the one place the agent's policies reach the kernel through.
pub trait Actuate {
    /// Opens a handle on thread `tid` of process `tgid` and reads its own attributes.
    fn adopt(&mut self, tgid: u32, tid: u32) -> Result<SchedAttr, ActError>;
    /// Gives `tid` the attributes `want` (its own are `orig`), guarded so they are undone if the agent dies.
    fn change(&mut self, tid: u32, want: &SchedAttr, orig: &SchedAttr) -> Result<(), ActError>;
    /// Writes `orig` back (and the thread's own CPU affinity, if the agent changed it) and drops the guard.
    /// What the agent set is re-read first ([`sched::write_back`]): a change someone else made since stands, and
    /// a renice during a boost is kept. Returns the thread's own attributes from now on when they are no longer
    /// `orig` (`None`: still `orig`).
    fn restore(&mut self, tid: u32, orig: &SchedAttr) -> Result<Option<SchedAttr>, ActError>;
    /// Gives `tid` CPU affinity `cpus` (with `None`, its own back), guarded like [`change`](Self::change).
    fn set_affinity(
        &mut self,
        tid: u32,
        cpus: Option<&[u32]>,
        orig: &SchedAttr,
    ) -> Result<(), ActError>;
    /// `child` was created by `parent` while the agent held `parent`'s affinity, and inherited it: its own
    /// affinity is `parent`'s own, and the agent's is to be undone like the parent's (no system call).
    fn inherit_affinity(
        &mut self,
        child: u32,
        parent: u32,
        orig: &SchedAttr,
    ) -> Result<(), ActError>;
    /// Drops the handle and guard of a thread that exited (nothing is written).
    fn forget(&mut self, tid: u32);
    /// Lowers the groups job `job` owns as nice 19 lowers a task (`lower`), guarded like
    /// [`change`](Self::change), or gives them their own weight back: its autogroup's nice when the job is in
    /// the root cpu cgroup ([`crate::autogroup`]), else the weight of every cpu cgroup its processes are in that
    /// it owns ([`crate::cpu_cgroup`]; an MPI job's ranks may sit in one per node). `job_pids` are the job's
    /// processes; `job_or_launcher` those and the processes that started the job: a group that holds anything
    /// else is not the job's and is left alone. Returns whether the job's groups now have what was asked
    /// (`false`: the job owns none).
    fn job_group(
        &mut self,
        job: u64,
        job_pids: &[u32],
        job_or_launcher: &HashSet<u32>,
        lower: bool,
    ) -> Result<bool, ActError>;
    /// The cpu cgroups lowered for job `job`: each one's id and its own weight in shares (what BPF's reading of
    /// `R` must count it at while it is lowered).
    fn lowered_cgroups(&self, _job: u64) -> Vec<(u64, u64)> {
        Vec::new()
    }
}

/// Whether a thread's own policy is time-sharing (`SCHED_OTHER` or `SCHED_BATCH`): only those are given
/// another nice level or slice.
pub fn time_sharing(orig: &SchedAttr) -> bool {
    orig.sched_policy == sched::SCHED_OTHER || orig.sched_policy == sched::SCHED_BATCH
}

/// Whether a thread may be boosted: only a time-sharing one. Real-time or deadline by its own choice has
/// nothing to gain (and the agent never lowers it); `SCHED_IDLE` chose to run only when nothing else wants the
/// CPU, and a boost would put it ahead of everything (issue 21, item 8).
pub fn boostable(orig: &SchedAttr) -> bool {
    time_sharing(orig)
}

/// How a boost is carried out (`cosched agent --mechanism`): the policy decides whom to boost and for how long,
/// the mechanism what the kernel is told for that window. Measured side by side in `docs/lab-local.md`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Mechanism {
    /// `SCHED_FIFO` at `--rt-prio` for the window: it preempts every fair-class task at once, whatever its
    /// share; the kernel charges the time to nobody's fair share, so the policy's budget holds fairness, and a
    /// local task that wakes there waits for the agent to pause the boost.
    #[default]
    Fifo,
    /// The thread stays in the fair class with a short custom slice ([`SLICE_BOOST_NS`]) and nice one step
    /// below its own for the window: EEVDF picks the eligible task with the earliest virtual deadline, and the
    /// short slice puts the thread's deadline first, so it runs at once if it is *eligible* — owed CPU by the
    /// kernel's own accounting — and waits its turn otherwise. The nice step is a priority change, which is what
    /// makes the kernel check for preemption at once (a slice change alone waits for the next tick). Its time
    /// is charged like any other, and a local task that wakes there competes with it as with any task.
    Slice,
}

impl Mechanism {
    /// The name on the command line and in the statistics.
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Fifo => "fifo",
            Mechanism::Slice => "slice",
        }
    }
}

/// The custom slice of a thread boosted by [`Mechanism::Slice`]: the kernel's smallest (it clamps
/// `sched_runtime` to 0.1–100 ms).
pub const SLICE_BOOST_NS: u64 = 100_000;

/// The nice level of a paused boost ([`Mode::Paused`]). A thread just out of `SCHED_FIFO` has run nothing the
/// fair class counts, so at its own nice it is picked again at once: a local task that waited behind its boost
/// waited on through the pause (the lab's 1 ms probe 24-74 ms at K = 0 when its wake-up went unseen, traced
/// with ftrace). At nice 19 every other task on the CPU goes first.
pub const PAUSE_NICE: i32 = 19;

/// The attributes a thread has in `mode` with its `slice_ns` override, given its own `orig`; `None` when that
/// is exactly `orig` (restore it). A boost is `mechanism`'s ([`Mechanism`]), `rt_prio` that of a `SCHED_FIFO`
/// one.
pub fn attributes(
    orig: &SchedAttr,
    mode: Mode,
    slice_ns: Option<u64>,
    mechanism: Mechanism,
    rt_prio: u32,
) -> Option<SchedAttr> {
    let mut a = match (mode, mechanism) {
        (Mode::Boosted { .. }, Mechanism::Fifo) => return Some(SchedAttr::fifo(rt_prio)),
        (Mode::Boosted { .. }, Mechanism::Slice) => {
            let mut a = orig.restorable();
            a.sched_nice = (orig.sched_nice - 1).max(-20);
            a.sched_runtime = SLICE_BOOST_NS;
            return Some(a);
        }
        (Mode::Normal, _) if slice_ns.is_none() => return None,
        (Mode::Normal | Mode::Niced { .. } | Mode::Paused, _) => orig.restorable(),
    };
    match mode {
        Mode::Niced { nice } => a.sched_nice = nice,
        Mode::Paused => a.sched_nice = PAUSE_NICE,
        _ => {}
    }
    if let Some(slice) = slice_ns {
        a.sched_runtime = slice;
    }
    Some(a)
}

/// A managed thread the actuator can act on: its pidfd, its guardian slot, and what the slot says it has.
struct Handle {
    target: Target,
    /// The start time of the process's leader at adoption: a thread that exec'd from a non-leader became it.
    leader_start: u64,
    slot: Option<SlotId>,
    /// The attributes the agent gave it (`None`: its own).
    set: Option<SchedAttr>,
    /// `(its own, the agent's)` CPU masks while the agent holds its affinity.
    affinity: Option<(CpuMask, CpuMask)>,
}

/// The real actuator: `sched_setattr` / `sched_setaffinity` through pidfd-guarded targets, every change
/// recorded with the guardian first.
pub struct SchedActuator {
    guardian: Guardian,
    handles: HashMap<u32, Handle>,
    /// Job → the groups the agent lowered for it (its session, or every cpu cgroup it owns), with their guardian
    /// slots.
    groups: HashMap<u64, Vec<(SlotId, LoweredGroup)>>,
    /// Job → when its autogroup was last found not to be its own (the /proc scan is not repeated within
    /// [`GROUP_RECHECK`]).
    not_owned: HashMap<u64, Instant>,
}

/// A group lowered for a job.
enum LoweredGroup {
    /// Its session: reached through process `through`, with its own nice.
    Session { through: u32, group: Autogroup },
    /// Its cpu cgroup, with its own weight and the one the agent gave it.
    Cgroup { group: CpuCgroup, own: u64 },
}

/// How long a job found not to own its autogroup is not looked at again.
const GROUP_RECHECK: Duration = Duration::from_secs(1);

impl SchedActuator {
    pub fn new(guardian: Guardian) -> SchedActuator {
        SchedActuator {
            guardian,
            handles: HashMap::new(),
            groups: HashMap::new(),
            not_owned: HashMap::new(),
        }
    }

    pub fn guardian_pid(&self) -> u32 {
        self.guardian.pid()
    }

    /// How many times the guardian revoked the agent's boosts (see [`Guardian::revoked`]).
    pub fn guardian_revocations(&self) -> u64 {
        self.guardian.revoked()
    }

    /// Renews the guardian's lease on the agent's boosts.
    pub fn heartbeat(&self) {
        self.guardian.heartbeat();
    }
}

/// Ends what the agent `set` on a handle's thread (its own attributes: `orig`), re-reading it first; if the
/// thread is gone because it exec'd from a non-leader thread, on the leader it became (`de_thread` gives it the
/// leader's pid and start time, and it keeps the boost). Returns its own attributes when they changed.
fn restore_set(
    h: &Handle,
    set: &SchedAttr,
    orig: &SchedAttr,
) -> Result<Option<SchedAttr>, SchedError> {
    let write_back = |target: &Target| -> Result<Option<SchedAttr>, SchedError> {
        let now = target.get()?;
        match sched::write_back(orig, set, &now, sched::nice_of(target.tid)) {
            Some(back) => {
                target.switch(&back, &now, &now)?;
                Ok((back != orig.restorable()).then_some(back))
            }
            // Someone else changed it since: theirs stands, and is its own from now on.
            None => Ok(Some(now.restorable())),
        }
    };
    match write_back(&h.target) {
        Err(SchedError::Gone { tid }) if h.target.tid != h.target.tgid => {
            let leader = Target::open(h.target.tgid, h.target.tgid)?;
            if leader.start_time != h.leader_start {
                return Err(SchedError::Gone { tid });
            }
            write_back(&leader)
        }
        other => other,
    }
}

/// A handle's slot, or a new one that says "its own attributes" (for a change of affinity alone).
fn slot_of(guardian: &mut Guardian, h: &Handle, orig: &SchedAttr) -> Result<SlotId, ActError> {
    match h.slot {
        Some(slot) => Ok(slot),
        None => guardian
            .record(
                (h.target.tgid, h.target.tid),
                (h.target.start_time, h.leader_start),
                orig,
                orig,
            )
            .ok_or(ActError::GuardianFull { tid: h.target.tid }),
    }
}

impl Actuate for SchedActuator {
    fn adopt(&mut self, tgid: u32, tid: u32) -> Result<SchedAttr, ActError> {
        let target = Target::open(tgid, tid)?;
        let orig = target.get()?;
        let handle = Handle {
            leader_start: sched::start_time(tgid, tgid).unwrap_or(0),
            target,
            slot: None,
            set: None,
            affinity: None,
        };
        if let Some(Handle {
            slot: Some(slot), ..
        }) = self.handles.insert(tid, handle)
        {
            self.guardian.release(slot);
        }
        Ok(orig)
    }

    fn change(&mut self, tid: u32, want: &SchedAttr, orig: &SchedAttr) -> Result<(), ActError> {
        let h = self
            .handles
            .get_mut(&tid)
            .ok_or(ActError::Unknown { tid })?;
        let mut want = *want;
        if want.is_realtime() {
            // The kernel keeps a task's nice level under a real-time policy and ignores this field: record the
            // level it holds now — the agent's own (a demotion's 19) or the thread's — so a restore can tell a
            // renice during the boost from the agent's demotion before it (sched::write_back). Known without a
            // system call: this is the boost's path.
            want.sched_nice = h.set.map_or(orig.sched_nice, |set| set.sched_nice);
        }
        let want = &want;
        // The slot says `want` before the kernel does, so a crash in between is undone too.
        let had_slot = h.slot.is_some();
        let slot = slot_of(&mut self.guardian, h, orig)?;
        self.guardian.update(slot, want);
        let now = h.set.unwrap_or(*orig);
        match h.target.switch(want, &now, orig) {
            Ok(()) => {
                h.slot = Some(slot);
                h.set = Some(*want);
                Ok(())
            }
            Err(err) => {
                if had_slot {
                    // Still as before: the slot goes back to saying so.
                    self.guardian.update(slot, &h.set.unwrap_or(*orig));
                } else {
                    self.guardian.release(slot);
                }
                Err(err.into())
            }
        }
    }

    fn restore(&mut self, tid: u32, orig: &SchedAttr) -> Result<Option<SchedAttr>, ActError> {
        let h = self
            .handles
            .get_mut(&tid)
            .ok_or(ActError::Unknown { tid })?;
        let res = match h.set {
            Some(set) => restore_set(h, &set, orig),
            // Its attributes are not the agent's (inherited ones, say): its own, unconditionally.
            None => h.target.set(&orig.restorable(), orig).map(|()| None),
        };
        let res = match h.affinity {
            Some((own, set)) => res.and_then(|r| h.target.set_affinity(&own, &set).map(|()| r)),
            None => res,
        };
        if matches!(&res, Err(e) if !matches!(e, SchedError::Gone { .. })) {
            // Not known to be restored: the guard stays, so the guardian still undoes it if the agent dies (and
            // the next change or the thread's exit reuses or frees the slot).
            return res.map_err(Into::into);
        }
        // Restored, or gone: nothing left to guard.
        h.set = None;
        h.affinity = None;
        if let Some(slot) = h.slot.take() {
            self.guardian.release(slot);
        }
        res.map_err(Into::into)
    }

    fn set_affinity(
        &mut self,
        tid: u32,
        cpus: Option<&[u32]>,
        orig: &SchedAttr,
    ) -> Result<(), ActError> {
        let h = self
            .handles
            .get_mut(&tid)
            .ok_or(ActError::Unknown { tid })?;
        let Some(cpus) = cpus else {
            // Its own mask back; the slot stays only while its attributes differ too.
            let Some((own, set)) = h.affinity else {
                return Ok(());
            };
            h.target.set_affinity(&own, &set)?;
            h.affinity = None;
            if let Some(slot) = h.slot {
                if h.set.is_none() {
                    self.guardian.release(slot);
                    h.slot = None;
                } else {
                    self.guardian.update_affinity(slot, None);
                }
            }
            return Ok(());
        };
        let mask = sched::cpu_mask(cpus)?;
        let own = match h.affinity {
            Some((own, _)) => own,
            None => h.target.get_affinity()?,
        };
        let had_slot = h.slot.is_some();
        let slot = slot_of(&mut self.guardian, h, orig)?;
        self.guardian.update_affinity(slot, Some((&mask, &own)));
        let prior = h.affinity.map_or(own, |(_, set)| set);
        match h.target.set_affinity(&mask, &prior) {
            Ok(()) => {
                h.slot = Some(slot);
                h.affinity = Some((own, mask));
                Ok(())
            }
            Err(err) => {
                if had_slot {
                    let before = h.affinity.as_ref().map(|(own, set)| (set, own));
                    self.guardian.update_affinity(slot, before);
                } else {
                    self.guardian.release(slot);
                }
                Err(err.into())
            }
        }
    }

    fn inherit_affinity(
        &mut self,
        child: u32,
        parent: u32,
        orig: &SchedAttr,
    ) -> Result<(), ActError> {
        let Some(masks) = self.handles.get(&parent).and_then(|p| p.affinity) else {
            return Ok(());
        };
        let h = self
            .handles
            .get_mut(&child)
            .ok_or(ActError::Unknown { tid: child })?;
        let slot = slot_of(&mut self.guardian, h, orig)?;
        self.guardian
            .update_affinity(slot, Some((&masks.1, &masks.0)));
        h.slot = Some(slot);
        h.affinity = Some(masks);
        Ok(())
    }

    fn forget(&mut self, tid: u32) {
        if let Some(Handle {
            slot: Some(slot), ..
        }) = self.handles.remove(&tid)
        {
            self.guardian.release(slot);
        }
    }

    fn job_group(
        &mut self,
        job: u64,
        job_pids: &[u32],
        job_or_launcher: &HashSet<u32>,
        lower: bool,
    ) -> Result<bool, ActError> {
        if !lower {
            let Some(groups) = self.groups.remove(&job) else {
                return Ok(false);
            };
            self.not_owned.remove(&job);
            let mut res = Ok(true);
            for (slot, group) in groups {
                let restored = match group {
                    LoweredGroup::Session { through, group } => restore_session(through, group),
                    LoweredGroup::Cgroup { group, own } => restore_cgroup(&group, own),
                };
                self.guardian.release(slot);
                if let Err(err) = restored {
                    res = Err(err);
                }
            }
            return res;
        }
        if self.groups.contains_key(&job) {
            return Ok(true);
        }
        if self
            .not_owned
            .get(&job)
            .is_some_and(|t| t.elapsed() < GROUP_RECHECK)
        {
            return Ok(false);
        }
        let session = job_pids
            .first()
            .and_then(|&pid| Some((pid, autogroup::owned_by_job(pid, job_or_launcher)?)));
        let lowered = if let Some((pid, group)) = session {
            vec![self.lower_session(job, pid, group)?]
        } else {
            self.lower_cgroups(job, &cpu_cgroup::owned_by_job(job_pids, job_or_launcher))?
        };
        if lowered.is_empty() {
            self.not_owned.insert(job, Instant::now());
            return Ok(false);
        }
        self.groups.insert(job, lowered);
        Ok(true)
    }

    fn lowered_cgroups(&self, job: u64) -> Vec<(u64, u64)> {
        self.groups
            .get(&job)
            .into_iter()
            .flatten()
            .filter_map(|(_, lowered)| match lowered {
                LoweredGroup::Cgroup { group, own } => Some((group.id, group.knob.to_shares(*own))),
                LoweredGroup::Session { .. } => None,
            })
            .collect()
    }
}

/// The nice of a session's autogroup whose nice is lowered as nice 19 lowers a task.
const GROUP_NICE: i32 = 19;

impl SchedActuator {
    fn lower_session(
        &mut self,
        job: u64,
        pid: u32,
        group: Autogroup,
    ) -> Result<(SlotId, LoweredGroup), ActError> {
        let start = sched::start_time(pid, pid).map_err(|err| ActError::Autogroup { pid, err })?;
        let slot = self
            .guardian
            .record_autogroup(pid, start, group, GROUP_NICE)
            .ok_or(ActError::GuardianFullGroup { job })?;
        if let Err(err) = autogroup::set_nice(pid, GROUP_NICE) {
            self.guardian.release(slot);
            return Err(ActError::Autogroup { pid, err });
        }
        Ok((
            slot,
            LoweredGroup::Session {
                through: pid,
                group,
            },
        ))
    }

    /// Lowers every group in `groups`, each recorded with the guardian first; if one fails, those already
    /// lowered get their own weight back and the error is returned.
    fn lower_cgroups(
        &mut self,
        job: u64,
        groups: &[CpuCgroup],
    ) -> Result<Vec<(SlotId, LoweredGroup)>, ActError> {
        let mut lowered = Vec::new();
        for group in groups {
            match self.lower_cgroup(job, group.clone()) {
                Ok(done) => lowered.push(done),
                Err(err) => {
                    for (slot, done) in lowered {
                        if let LoweredGroup::Cgroup { group, own } = done {
                            let _ = restore_cgroup(&group, own);
                        }
                        self.guardian.release(slot);
                    }
                    return Err(err);
                }
            }
        }
        Ok(lowered)
    }

    fn lower_cgroup(
        &mut self,
        job: u64,
        group: CpuCgroup,
    ) -> Result<(SlotId, LoweredGroup), ActError> {
        let cgroup_error = |err| ActError::Cgroup {
            dir: group.dir.clone(),
            err,
        };
        let own = group.weight().map_err(cgroup_error)?;
        let set = cpu_cgroup::lowered(group.knob, own);
        let slot = self
            .guardian
            .record_cgroup(&group, own, set)
            .ok_or(ActError::GuardianFullGroup { job })?;
        if let Err(err) = group.set_weight(set) {
            self.guardian.release(slot);
            return Err(cgroup_error(err));
        }
        Ok((slot, LoweredGroup::Cgroup { group, own }))
    }
}

/// Gives a session its own nice back: through the process it was lowered through or, gone, any still in the
/// group; only if it still has the agent's nice (a change by anyone else stands).
fn restore_session(through: u32, group: Autogroup) -> Result<(), ActError> {
    let in_group = |p: u32| {
        autogroup::of(p)
            .filter(|g| g.id == group.id)
            .map(|g| (p, g))
    };
    let member =
        in_group(through).or_else(|| autogroup::members(group.id).into_iter().find_map(in_group));
    match member {
        Some((p, g)) if g.nice != group.nice => {
            autogroup::set_nice(p, group.nice).map_err(|err| ActError::Autogroup { pid: p, err })
        }
        _ => Ok(()),
    }
}

/// Gives a cpu cgroup its own weight back, only if it still has the agent's ([`cpu_cgroup::give_back`]).
fn restore_cgroup(group: &CpuCgroup, own: u64) -> Result<(), ActError> {
    cpu_cgroup::give_back(group, cpu_cgroup::lowered(group.knob, own), own)
        .map(|_| ())
        .map_err(|err| ActError::Cgroup {
            dir: group.dir.clone(),
            err,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn other(nice: i32) -> SchedAttr {
        SchedAttr {
            size: std::mem::size_of::<SchedAttr>() as u32,
            sched_policy: sched::SCHED_OTHER,
            sched_nice: nice,
            ..Default::default()
        }
    }

    #[test]
    fn each_mode_maps_to_one_set_of_attributes() {
        let orig = other(5);
        // Normal without overrides: exactly its own attributes (restore).
        assert_eq!(
            attributes(&orig, Mode::Normal, None, Mechanism::Fifo, 1),
            None
        );
        // Boosted: SCHED_FIFO at --rt-prio, reset on fork, whatever its nice or slice.
        let b = attributes(
            &orig,
            Mode::Boosted { since: 0, until: 1 },
            Some(3_000_000),
            Mechanism::Fifo,
            7,
        )
        .unwrap();
        assert_eq!(
            (b.sched_policy, b.sched_priority, b.sched_flags),
            (sched::SCHED_FIFO, 7, sched::SCHED_FLAG_RESET_ON_FORK)
        );
        // Niced: its own policy at the new nice, its own slice.
        let n = attributes(&orig, Mode::Niced { nice: 19 }, None, Mechanism::Fifo, 1).unwrap();
        assert_eq!((n.sched_policy, n.sched_nice), (sched::SCHED_OTHER, 19));
        // A slice override holds in Normal and Niced.
        let s = attributes(&orig, Mode::Normal, Some(700_000), Mechanism::Fifo, 1).unwrap();
        assert_eq!((s.sched_nice, s.sched_runtime), (5, 700_000));
        let ns = attributes(
            &orig,
            Mode::Niced { nice: 19 },
            Some(700_000),
            Mechanism::Fifo,
            1,
        )
        .unwrap();
        assert_eq!((ns.sched_nice, ns.sched_runtime), (19, 700_000));
    }

    #[test]
    fn a_slice_boost_stays_in_the_fair_class_one_nice_step_up_with_the_shortest_slice() {
        let boosted = Mode::Boosted { since: 0, until: 1 };
        let b = attributes(&other(5), boosted, Some(3_000_000), Mechanism::Slice, 7).unwrap();
        assert_eq!(
            (
                b.sched_policy,
                b.sched_priority,
                b.sched_nice,
                b.sched_runtime
            ),
            (sched::SCHED_OTHER, 0, 4, SLICE_BOOST_NS)
        );
        // Its own policy is kept (SCHED_BATCH stays batch), and nice never goes below -20.
        let batch = SchedAttr {
            sched_policy: sched::SCHED_BATCH,
            ..other(-20)
        };
        let b = attributes(&batch, boosted, None, Mechanism::Slice, 7).unwrap();
        assert_eq!((b.sched_policy, b.sched_nice), (sched::SCHED_BATCH, -20));
        // A demoted thread boosted this way gets its own level minus one, not 18.
        let b = attributes(&other(0), boosted, None, Mechanism::Slice, 7).unwrap();
        assert_eq!(b.sched_nice, -1);
        // Outside a boost the mechanism changes nothing.
        assert_eq!(
            attributes(&other(5), Mode::Normal, None, Mechanism::Slice, 7),
            None
        );
        let n = attributes(
            &other(5),
            Mode::Niced { nice: 19 },
            None,
            Mechanism::Slice,
            7,
        )
        .unwrap();
        assert_eq!((n.sched_nice, n.sched_runtime), (19, 0));
    }

    #[test]
    fn only_time_sharing_threads_are_boosted_or_reniced() {
        let fifo = SchedAttr::fifo(50);
        assert!(!boostable(&fifo) && !time_sharing(&fifo));
        // SCHED_IDLE asked for leftovers only: neither boosted nor reniced.
        let idle = SchedAttr {
            sched_policy: sched::SCHED_IDLE,
            ..other(0)
        };
        assert!(!boostable(&idle) && !time_sharing(&idle));
        let deadline = SchedAttr {
            sched_policy: sched::SCHED_DEADLINE,
            ..other(0)
        };
        assert!(!boostable(&deadline));
        let batch = SchedAttr {
            sched_policy: sched::SCHED_BATCH,
            ..other(0)
        };
        assert!(boostable(&batch) && time_sharing(&batch));
        assert!(boostable(&other(0)) && time_sharing(&other(0)));
    }
}
