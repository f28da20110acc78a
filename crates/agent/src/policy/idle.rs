//! `--policy idle` (tests only): a policy that does nothing, written to prove the seam — its own module and
//! its `mod` line and row in `policy/mod.rs`, nothing else. It acts on nothing but records every event it is
//! handed (and arms one deadline per arrival), so a test can see each reach it.

use crate::policy::{Arrival, Counter, Ctx, Host, Policy, PolicyFlags};
use std::cell::RefCell;
use std::rc::Rc;

thread_local! {
    /// What the last `Idle` built on this thread saw (tests run on their own threads).
    pub static IDLE_SEEN: Rc<RefCell<Vec<String>>> = Rc::default();
}

/// `--policy idle`'s flags.
#[derive(clap::Args, Debug, Clone)]
pub struct IdleFlags {
    /// Deadline period of the do-nothing policy.
    #[arg(long, default_value_t = 5)]
    pub idle_every_ms: u64,
}

impl PolicyFlags for IdleFlags {
    fn build(self, _host: &Host) -> anyhow::Result<Box<dyn Policy>> {
        Ok(Box::new(Idle {
            every_ms: self.idle_every_ms,
            seen: IDLE_SEEN.with(|s| s.clone()),
        }))
    }
}

/// The policy.
pub struct Idle {
    every_ms: u64,
    seen: Rc<RefCell<Vec<String>>>,
}

const COUNTERS: &[Counter] = &[Counter {
    name: "ignored",
    refusal: true,
    description: "arrivals it let be",
}];

impl Policy for Idle {
    fn describe(&self) -> Vec<String> {
        vec![format!("idle_every_ms={}", self.every_ms)]
    }
    fn counters(&self) -> &'static [Counter] {
        COUNTERS
    }
    fn on_process_arrival(&mut self, _ctx: &mut Ctx, tgid: u32) {
        self.seen.borrow_mut().push(format!("process {tgid}"));
    }
    fn on_process_exit(&mut self, tgid: u32) {
        self.seen.borrow_mut().push(format!("exit {tgid}"));
    }
    fn on_arrival(&mut self, ctx: &mut Ctx, a: &Arrival) {
        self.seen.borrow_mut().push(format!("arrival {}", a.tid));
        ctx.note(a.tgid, a.tid, "ignored", format_args!(""));
        // Checked like every duration read from a flag: a huge --idle-every-ms arms "never", it does not wrap.
        ctx.arm(
            ctx.now()
                .saturating_add(self.every_ms.saturating_mul(cosched_policy::MILLIS)),
        );
    }
    fn on_window_end(&mut self, _ctx: &mut Ctx, tid: u32) {
        self.seen.borrow_mut().push(format!("window {tid}"));
    }
    fn on_deadline(&mut self, ctx: &mut Ctx) {
        self.seen
            .borrow_mut()
            .push(format!("deadline {}", ctx.now()));
    }
    fn on_tick(&mut self, ctx: &mut Ctx) {
        self.seen.borrow_mut().push(format!("tick {}", ctx.now()));
    }
}
