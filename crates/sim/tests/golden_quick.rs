//! Seed 000's simulated results may not move by accident: `cosched sim experiments/sim --quick` must write
//! `runs.json` files byte-identical to the ones recorded before the policy seams were cut (issue 20, at
//! 068cfae). A change that moves a decision on purpose updates these hashes and says what moved in
//! `docs/sim-dcs.md`.

use cosched_sim::cli::{run, SimArgs};
use sha2::{Digest, Sha256};
use std::path::PathBuf;

/// sha256 of each experiment's `runs.json` under `--quick`, recorded at 068cfae.
const RECORDED: &[(&str, &str)] = &[
    (
        "fig03-latency",
        "8255dea5a422dbfda0158ab354a2414c921e59f240fb4296114fa4c7bbeee4ea",
    ),
    (
        "fig04-barrier",
        "8a0955a3dd5aca919b9ee96e42d38d0ed176fb43703400228b1057f2a109f70f",
    ),
    (
        "fig07-mixed",
        "595f27290b1387269d1f8a7919b7b777dcbc36ddc30873e1855c2f0d490bca8e",
    ),
    (
        "fig09-slpret-ablation",
        "dd738549ed86627518c6b553059b5178dc795bb757c8bdcc3ea1f95e0e4a88c3",
    ),
    (
        "smoke",
        "e3c6da0ff07c658ceef7f8009489e8255f1efb5c69a9cafd17f5f53fa7052e2f",
    ),
];

#[test]
fn quick_suite_runs_json_is_byte_identical_to_the_recorded_hashes() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = std::env::temp_dir().join(format!("cosched-golden-quick-{}", std::process::id()));
    run(SimArgs {
        path: root.join("experiments/sim"),
        out: out.clone(),
        repetitions: None,
        quick: true,
        threads: Some(2),
    })
    .expect("the quick suite runs");
    let mut moved = Vec::new();
    for (experiment, recorded) in RECORDED {
        let bytes =
            std::fs::read(out.join(experiment).join("runs.json")).expect("runs.json written");
        let hash = format!("{:x}", Sha256::digest(&bytes));
        if hash != *recorded {
            moved.push(format!("{experiment}: {hash} (recorded {recorded})"));
        }
    }
    let _ = std::fs::remove_dir_all(&out);
    assert!(
        moved.is_empty(),
        "simulated results moved:\n{}",
        moved.join("\n")
    );
}
