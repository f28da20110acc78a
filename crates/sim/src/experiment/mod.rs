//! Experiment files (TOML): parsing, validation into `Scenario`s, sweeps and output (under construction).
