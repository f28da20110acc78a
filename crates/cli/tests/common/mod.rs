//! What the "adding a policy" and "adding an OS model" tests share.

use std::path::{Path, PathBuf};

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The files under `crates/` and `experiments/` that contain any of `names`, relative to the root and sorted;
/// `except` (the asking test, which names them too) is left out.
pub fn files_naming(names: &[&str], except: &str) -> Vec<String> {
    fn walk(dir: &Path, names: &[&str], except: &str, found: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy();
            if path.is_dir() {
                if name != "target" && !name.starts_with('.') {
                    walk(&path, names, except, found);
                }
                continue;
            }
            if path.ends_with(except) {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            if names.iter().any(|n| text.contains(n)) {
                let relative = path.strip_prefix(root()).unwrap();
                found.push(relative.to_string_lossy().into_owned());
            }
        }
    }
    let mut found = Vec::new();
    for dir in ["crates", "experiments"] {
        walk(&root().join(dir), names, except, &mut found);
    }
    found.sort();
    found
}
