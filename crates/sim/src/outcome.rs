//! What a simulated run gives back: its output, or why it could not start. A leaf module, so the world that
//! produces them and the crate root that hands them out do not import each other.

/// What one simulated run produced.
#[derive(Clone, Debug, PartialEq)]
pub struct SimOutput {
    /// The run's measurement, in the schema shared with real runs.
    pub measurement: cosched_report::Measurement,
    /// Events the engine processed (stale timers excluded).
    pub events: u64,
    /// Simulated time at the end of the run (ns).
    pub sim_time_ns: u64,
    /// Messages sent and messages delivered (equal in a finished run: the network never loses one).
    pub messages_sent: u64,
    pub messages_delivered: u64,
    /// Every measured (parallel) job, in job order; the first is the one the measurement's own figures
    /// describe.
    pub measured_jobs: Vec<crate::metrics::MeasuredJob>,
}

/// Why a run could not start.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SimError {
    #[error("invalid scenario: {0}")]
    InvalidScenario(#[from] crate::scenario::ScenarioError),
    /// The policy's commands need an operation the scenario's OS model does not carry out.
    #[error("policy '{policy}' cannot run here: {source}")]
    Unsupported {
        policy: &'static str,
        source: crate::os::Unsupported,
    },
    /// The scenario's `os.run_queue = "shared"` needs a model that can share one run queue among a node's CPUs.
    #[error("os.run_queue = \"shared\" cannot run here: {source}; use run_queue = \"per-cpu\"")]
    SharedRunQueue { source: crate::os::Unsupported },
}
