//! No import cycle between the files of a crate, for every crate of the workspace.
//!
//! A file's dependencies are the modules its paths name: `crate::a::b` (in `use` trees too, `crate::{a, b::c}`),
//! `super::x` (relative to the file, or to the inline module it is written in) and, in the crate root, a bare
//! `a::` for a module `a` it declares. Each path is resolved to the file of its longest module prefix (`a/b.rs`,
//! `a/b/mod.rs`, `a.rs`, `a/mod.rs`); a name the root re-exports (`pub use runner::run_experiment`) resolves to
//! the module it comes from. Comments, strings and character literals are skipped. The root's `mod` and
//! `pub use` lines declare the tree and are not dependencies. Edges are from file to file; a cycle is reported
//! with every file on it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The crates this test covers (paths from this crate's manifest directory).
const CRATES: [&str; 9] = [
    "../policy",
    "../sim",
    "../report",
    "../bench",
    "../agent",
    "../lab",
    "../manager",
    "../localsock",
    ".",
];

/// Source with comments, string literals and character literals replaced by spaces (lengths kept).
fn code_only(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    let blank = |out: &mut String, c: char| out.push(if c == '\n' { '\n' } else { ' ' });
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                blank(&mut out, chars[i]);
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, chars[i]);
                    i += 1;
                }
            }
        } else if (c == 'r' || (c == 'b' && next == Some('r')))
            && !chars[..i]
                .last()
                .is_some_and(|p| p.is_alphanumeric() || *p == '_')
            && {
                let mut j = i + if c == 'b' { 2 } else { 1 };
                while chars.get(j) == Some(&'#') {
                    j += 1;
                }
                chars.get(j) == Some(&'"')
            }
        {
            // Raw string: r"..." / r#"..."# / br"...".
            let mut j = i + if c == 'b' { 2 } else { 1 };
            let mut hashes = 0;
            while chars[j] == '#' {
                hashes += 1;
                j += 1;
            }
            j += 1;
            loop {
                if j >= chars.len() {
                    break;
                }
                if chars[j] == '"' && (0..hashes).all(|h| chars.get(j + 1 + h) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            for &ch in &chars[i..j.min(chars.len())] {
                blank(&mut out, ch);
            }
            i = j;
        } else if c == '"' {
            blank(&mut out, c);
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    blank(&mut out, chars[i]);
                    i += 1;
                }
                if i < chars.len() {
                    blank(&mut out, chars[i]);
                    i += 1;
                }
            }
            if i < chars.len() {
                blank(&mut out, chars[i]);
                i += 1;
            }
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{7f}') or a lifetime ('a, 'static).
            let end = if next == Some('\\') {
                // The closing quote comes after the escape's two characters at least (`'\''`).
                (i + 3..chars.len()).find(|&j| chars[j] == '\'')
            } else if chars.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(end) => {
                    for &ch in &chars[i..=end] {
                        blank(&mut out, ch);
                    }
                    i = end + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Tokens: identifiers (with `_` and digits), `::`, and single punctuation characters.
fn tokens(code: &str) -> Vec<String> {
    let chars: Vec<char> = code.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            tokens.push(chars[start..i].iter().collect());
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            tokens.push("::".into());
            i += 2;
        } else {
            tokens.push(c.to_string());
            i += 1;
        }
    }
    tokens
}

/// The paths of a use tree or path expression starting at `tokens[at]` (just after `crate::`), each as its
/// segments after `prefix`. Returns the paths and the index after the tree.
fn paths_at(tokens: &[String], mut at: usize, prefix: Vec<String>) -> (Vec<Vec<String>>, usize) {
    let mut path = prefix;
    loop {
        match tokens.get(at).map(String::as_str) {
            Some("{") => {
                let mut all = Vec::new();
                at += 1;
                while tokens.get(at).is_some_and(|t| t != "}") {
                    let (mut inner, next) = paths_at(tokens, at, path.clone());
                    all.append(&mut inner);
                    // Always move on, whatever the tree holds.
                    at = next.max(at + 1);
                    if tokens.get(at).is_some_and(|t| t == ",") {
                        at += 1;
                    }
                }
                return (all, at + 1);
            }
            Some(t) if t.chars().all(|c| c.is_alphanumeric() || c == '_') => {
                path.push(t.to_string());
                at += 1;
                if tokens.get(at).is_some_and(|t| t == "::") {
                    at += 1;
                } else {
                    return (vec![path], at);
                }
            }
            // A glob ends the path with `*`; anything else just ends it.
            Some("*") => {
                path.push("*".into());
                return (vec![path], at + 1);
            }
            _ => return (vec![path], at),
        }
    }
}

/// One crate's files, by module path (`[]` for the root, `["programs", "pingpong"]` for
/// `programs/pingpong.rs`).
fn module_files(src: &Path) -> BTreeMap<Vec<String>, PathBuf> {
    fn walk(dir: &Path, module: &[String], files: &mut BTreeMap<Vec<String>, PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            let name = path.file_stem().unwrap().to_string_lossy().to_string();
            if path.is_dir() {
                if name != "bin" || !module.is_empty() {
                    let mut sub = module.to_vec();
                    sub.push(name);
                    walk(&path, &sub, files);
                }
            } else if path.extension().is_some_and(|e| e == "rs") {
                let mut m = module.to_vec();
                if !(name == "mod" || (module.is_empty() && (name == "lib" || name == "main"))) {
                    m.push(name);
                }
                files.insert(m, path);
            }
        }
    }
    let mut files = BTreeMap::new();
    walk(src, &[], &mut files);
    files
}

/// File → the files it depends on.
fn dependencies(src: &Path) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
    let files = module_files(src);
    let root_file = files[&Vec::new()].clone();
    let root_tokens = tokens(&code_only(&std::fs::read_to_string(&root_file).unwrap()));
    // What the root re-exports: `pub use a::b::Name;` / `pub use a::{X, Y};` → Name → [a, b, Name].
    let mut reexports: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut glob_reexports: Vec<Vec<String>> = Vec::new();
    for i in 0..root_tokens.len() {
        if root_tokens[i] == "pub" && root_tokens.get(i + 1).is_some_and(|t| t == "use") {
            for mut path in paths_at(&root_tokens, i + 2, Vec::new()).0 {
                match path.last().map(String::as_str) {
                    Some("*") => {
                        path.pop();
                        glob_reexports.push(path);
                    }
                    Some(name) => {
                        reexports.insert(name.to_string(), path);
                    }
                    None => {}
                }
            }
        }
    }
    let module_names: BTreeSet<&String> = files.keys().filter_map(|m| m.first()).collect();
    // The file of the longest module prefix of an absolute path.
    let resolve = |path: &[String]| -> Option<PathBuf> {
        let path: Vec<String> = match path.first().and_then(|name| reexports.get(name)) {
            Some(target) if !module_names.contains(&path[0]) => {
                target.iter().chain(&path[1..]).cloned().collect()
            }
            _ => path.to_vec(),
        };
        (1..=path.len())
            .rev()
            .find_map(|n| files.get(&path[..n]).cloned())
            .or_else(|| {
                // An item of a glob re-export (`pub use schema::*`) or of the root itself.
                glob_reexports
                    .iter()
                    .find_map(|g| files.get(g).cloned())
                    .filter(|_| !path.is_empty() && !module_names.contains(&path[0]))
            })
            .or_else(|| Some(root_file.clone()))
    };

    let mut graph: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    for (module, file) in &files {
        let toks = tokens(&code_only(&std::fs::read_to_string(file).unwrap()));
        let is_root = module.is_empty();
        let mut deps = BTreeSet::new();
        // Inline modules (`mod tests { ... }`) open at these brace depths.
        let mut depth = 0usize;
        let mut inline_modules: Vec<usize> = Vec::new();
        let mut i = 0;
        while i < toks.len() {
            let t = toks[i].as_str();
            match t {
                "{" => {
                    if i >= 2 && toks[i - 2] == "mod" {
                        inline_modules.push(depth);
                    }
                    depth += 1;
                }
                "}" => {
                    depth = depth.saturating_sub(1);
                    if inline_modules.last() == Some(&depth) {
                        inline_modules.pop();
                    }
                }
                _ => {}
            }
            // The root's own tree: `mod a;`, `pub use a::B;`.
            let declaring =
                is_root && (t == "mod" || (t == "use" && i > 0 && toks[i - 1] == "pub"));
            if declaring {
                while i < toks.len() && toks[i] != ";" && toks[i] != "{" {
                    i += 1;
                }
                continue;
            }
            let follows_path = i > 0 && toks[i - 1] == "::";
            let next_is_path = toks.get(i + 1).is_some_and(|n| n == "::");
            if !follows_path && next_is_path {
                let absolute = match t {
                    "crate" => Some(Vec::new()),
                    "super" => {
                        // `super` inside an inline module of this file is this file; at the top, its parent.
                        if inline_modules.is_empty() {
                            Some(module[..module.len().saturating_sub(1)].to_vec())
                        } else {
                            Some(module.clone())
                        }
                    }
                    name if is_root && module_names.contains(&name.to_string()) => {
                        Some(vec![name.to_string()])
                    }
                    _ => None,
                };
                if let Some(prefix) = absolute {
                    let skip = if t == "crate" || t == "super" { 2 } else { 0 };
                    let (paths, next) = if skip == 0 {
                        paths_at(&toks, i, Vec::new())
                    } else {
                        paths_at(&toks, i + skip, prefix.clone())
                    };
                    for path in paths {
                        if let Some(target) = resolve(&path) {
                            if &target != file {
                                deps.insert(target);
                            }
                        }
                    }
                    i = next;
                    continue;
                }
            }
            i += 1;
        }
        graph.insert(file.clone(), deps);
    }
    graph
}

/// A cycle of the graph, if it has one (its files in order).
fn find_cycle(graph: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Option<Vec<PathBuf>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    fn visit(
        node: &PathBuf,
        graph: &BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        marks: &mut BTreeMap<PathBuf, Mark>,
        stack: &mut Vec<PathBuf>,
    ) -> Option<Vec<PathBuf>> {
        match marks.get(node) {
            Some(Mark::Done) => return None,
            Some(Mark::Open) => {
                let from = stack.iter().position(|n| n == node).unwrap();
                return Some(stack[from..].to_vec());
            }
            None => {}
        }
        marks.insert(node.clone(), Mark::Open);
        stack.push(node.clone());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, marks, stack) {
                return Some(cycle);
            }
        }
        stack.pop();
        marks.insert(node.clone(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut marks, &mut Vec::new()))
}

fn src(krate: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(krate)
        .join("src")
}

fn short(path: &Path) -> String {
    let text = path.display().to_string();
    text.split("/crates/").last().unwrap_or(&text).to_string()
}

#[test]
fn no_file_of_any_crate_imports_one_that_imports_it_back() {
    // `MODULE_GRAPH_CRATES=../sim,../agent cargo test --test module_graph` checks other crates instead.
    let crates: Vec<String> = match std::env::var("MODULE_GRAPH_CRATES") {
        Ok(list) => list.split(',').map(str::to_string).collect(),
        Err(_) => CRATES.map(str::to_string).to_vec(),
    };
    for krate in &crates {
        let graph = dependencies(&src(krate));
        if let Some(cycle) = find_cycle(&graph) {
            let names: Vec<String> = cycle.iter().map(|p| short(p)).collect();
            panic!(
                "import cycle: {} -> (back to the first)",
                names.join(" -> ")
            );
        }
    }
}

#[test]
fn the_graph_sees_the_dependencies_that_are_there() {
    // The lab's runner imports the programs and the measure step; programs does not import the runner
    // (the cycle issue 20 removed, through `Binaries`).
    let graph = dependencies(&src("../lab"));
    let lab = |name: &str| src("../lab").join(name);
    let runner = &graph[&lab("runner.rs")];
    assert!(runner.contains(&lab("programs.rs")), "{runner:?}");
    assert!(runner.contains(&lab("measure.rs")));
    assert!(runner.contains(&lab("binaries.rs")));
    assert!(!graph[&lab("programs.rs")].contains(&lab("runner.rs")));
    // `crate::{cpustat, signals}` names two modules in one tree.
    assert!(runner.contains(&lab("cpustat.rs")) && runner.contains(&lab("signals.rs")));
    // The bench's pingpong uses `crate::rank::...` from its subdirectory.
    let bench = dependencies(&src("../bench"));
    let pingpong = &bench[&src("../bench").join("programs/pingpong.rs")];
    assert!(
        pingpong.contains(&src("../bench").join("rank.rs")),
        "{pingpong:?}"
    );
}

#[test]
fn a_cycle_is_found_and_named() {
    let dir = std::env::temp_dir().join(format!("cosched-module-graph-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("src/sub")).unwrap();
    let write = |name: &str, text: &str| std::fs::write(dir.join("src").join(name), text).unwrap();
    write(
        "lib.rs",
        "pub mod a;\npub mod b;\npub mod sub;\npub use a::Thing;\n",
    );
    // a → b through a use tree, b → sub/leaf, sub/leaf → a through the root's re-export: a cycle of three.
    // Comments and strings that name modules are not dependencies.
    write(
        "a.rs",
        "use crate::{b::B, sub};\npub struct Thing;\n// crate::sub::leaf\nconst S: &str = \"crate::b\";\n",
    );
    write("b.rs", "pub struct B(crate::sub::leaf::Leaf);\n");
    write("sub/mod.rs", "pub mod leaf;\n");
    write(
        "sub/leaf.rs",
        "pub struct Leaf;\nfn f() -> crate::Thing { crate::Thing }\n#[cfg(test)]\nmod tests { use super::*; }\n",
    );
    let graph = dependencies(&dir.join("src"));
    let cycle = find_cycle(&graph).expect("a → b → sub/leaf → a");
    let names: BTreeSet<String> = cycle
        .iter()
        .map(|p| {
            p.strip_prefix(dir.join("src"))
                .unwrap()
                .display()
                .to_string()
        })
        .collect();
    // `use crate::{b::B, sub}` also names sub/mod.rs, which is not on the cycle.
    assert_eq!(
        names,
        BTreeSet::from(["a.rs".into(), "b.rs".into(), "sub/leaf.rs".into()])
    );
    // Without the way back there is none.
    write("sub/leaf.rs", "pub struct Leaf;\n");
    assert_eq!(find_cycle(&dependencies(&dir.join("src"))), None);
    let _ = std::fs::remove_dir_all(&dir);
}
