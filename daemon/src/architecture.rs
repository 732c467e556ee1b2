//! Tests that hold the code to the structure `lib.rs` describes: each layer
//! uses only the layers listed before it, and no two files import each
//! other, directly or round a longer loop.
//!
//! The layer order is read from `lib.rs`'s own module docs (the numbered
//! list), so the picture a newcomer reads is the one that is enforced.
//! Code is read as text: every `crate::`, `super::` and `self::` path,
//! with `use` groups expanded, outside comments and test code (test
//! modules may build fixtures from any layer).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path within the crate: `["engine", "run"]` for engine/run.rs.
type ModPath = Vec<String>;

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The layers in order, from the numbered list in lib.rs's docs
/// (`//! 3. [`model`]: ...`).
fn layers(lib_rs: &str) -> Vec<String> {
    lib_rs
        .lines()
        .filter_map(|line| line.strip_prefix("//!"))
        .filter_map(|line| {
            let line = line.trim_start();
            let (number, rest) = line.split_once(". [`")?;
            number.parse::<u32>().ok()?;
            Some(rest.split_once('`')?.0.to_string())
        })
        .collect()
}

/// Every .rs file under `dir` with its module path, except the binaries
/// and files that hold only tests.
fn source_files(dir: &Path, prefix: &ModPath, out: &mut Vec<(ModPath, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for path in entries {
        let Some(name) = path
            .file_name()
            .and_then(|n| n.to_str())
            .map(str::to_string)
        else {
            continue;
        };
        if path.is_dir() {
            if prefix.is_empty() && name == "bin" || name == "tests" {
                continue;
            }
            let mut sub = prefix.clone();
            sub.push(name);
            source_files(&path, &sub, out);
        } else if let Some(stem) = name.strip_suffix(".rs") {
            if stem == "tests" || (prefix.is_empty() && stem == "architecture") {
                continue;
            }
            let mut module = prefix.clone();
            if stem != "mod" && !(prefix.is_empty() && stem == "lib") {
                module.push(stem.to_string());
            }
            out.push((module, path));
        }
    }
}

/// The code of a file without comments and without its test module
/// (by convention the last item: `#[cfg(test)]` then `mod`).
fn code_of(text: &str) -> String {
    let mut code = String::with_capacity(text.len());
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]")
            && lines
                .peek()
                .is_some_and(|next| next.trim_start().starts_with("mod "))
        {
            break;
        }
        if trimmed.starts_with("//") {
            continue;
        }
        let line = match line.find(" // ") {
            Some(i) if !line[..i].contains('"') => &line[..i],
            _ => line,
        };
        code.push_str(line);
        code.push('\n');
    }
    code
}

/// Expands a `use` tree (`crate::a::{b, c::{d, e}}`) into its paths.
fn expand_use(tree: &str) -> Vec<String> {
    let tree: String = tree.chars().filter(|c| !c.is_whitespace()).collect();
    let Some(open) = tree.find('{') else {
        return vec![tree];
    };
    let prefix = &tree[..open];
    let Some(inner) = tree.get(open + 1..tree.len().saturating_sub(1)) else {
        return vec![tree];
    };
    // Split the group at top-level commas.
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|part| !part.is_empty())
        .flat_map(|part| expand_use(&format!("{prefix}{part}")))
        .collect()
}

/// The paths a file's code names: `use` trees expanded, and every other
/// `crate::`/`super::`/`self::` path as written.
fn paths_in(code: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut rest = code;
    // `use` statements, possibly spanning lines.
    let mut without_uses = String::with_capacity(code.len());
    while let Some(at) = find_use(rest) {
        without_uses.push_str(&rest[..at]);
        let after = &rest[at..];
        let Some(end) = after.find(';') else {
            break;
        };
        let statement = after[..end].trim_start();
        let tree = statement
            .trim_start_matches("pub(crate) ")
            .trim_start_matches("pub(super) ")
            .trim_start_matches("pub ")
            .trim_start_matches("use ");
        paths.extend(expand_use(tree));
        rest = &after[end + 1..];
    }
    without_uses.push_str(rest);
    for start in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(i) = without_uses[from..].find(start) {
            let at = from + i;
            from = at + start.len();
            let before = without_uses[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let path: String = without_uses[at..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            paths.push(path);
        }
    }
    paths
}

/// Where the next `use` statement starts (at the start of a line).
fn find_use(text: &str) -> Option<usize> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let body = trimmed
            .strip_prefix("pub(crate) ")
            .or_else(|| trimmed.strip_prefix("pub(super) "))
            .or_else(|| trimmed.strip_prefix("pub "))
            .unwrap_or(trimmed);
        if body.starts_with("use ") {
            return Some(offset + indent);
        }
        offset += line.len();
    }
    None
}

/// The module a path names, absolute: `super::x` from engine/run.rs is
/// `engine::x`. `None` for paths outside the crate.
fn resolve(from: &ModPath, path: &str) -> Option<ModPath> {
    let mut segments = path.split("::").filter(|s| !s.is_empty());
    // A file's module path is where its items live (engine/mod.rs is
    // `engine`, engine/run.rs is `engine::run`), so `super` is one up.
    let mut base: ModPath = from.clone();
    let first = segments.next()?;
    match first {
        "crate" => base.clear(),
        "self" => {}
        "super" => {
            base.pop();
        }
        _ => return None,
    }
    for segment in segments {
        match segment {
            "super" => {
                base.pop();
            }
            "self" => {}
            name => base.push(name.to_string()),
        }
    }
    Some(base)
}

/// The file a module path lands in: the longest prefix that is a file.
fn file_of(modules: &BTreeSet<ModPath>, path: &ModPath) -> Option<ModPath> {
    (0..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|prefix| modules.contains(prefix))
}

struct Crate {
    layers: Vec<String>,
    /// Each file's module and the modules (files) its code uses.
    uses: BTreeMap<ModPath, BTreeSet<ModPath>>,
}

fn read_crate() -> Crate {
    let src = src_dir();
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap_or_default();
    let mut files = Vec::new();
    source_files(&src, &Vec::new(), &mut files);
    let modules: BTreeSet<ModPath> = files.iter().map(|(m, _)| m.clone()).collect();
    let mut uses = BTreeMap::new();
    for (module, path) in &files {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let mut used = BTreeSet::new();
        for p in paths_in(&code_of(&text)) {
            let Some(target) = resolve(module, &p) else {
                continue;
            };
            if let Some(file) = file_of(&modules, &target)
                && &file != module
            {
                used.insert(file);
            }
        }
        uses.insert(module.clone(), used);
    }
    Crate {
        layers: layers(&lib),
        uses,
    }
}

/// "engine::run" for display.
fn name(module: &ModPath) -> String {
    if module.is_empty() {
        "lib".into()
    } else {
        module.join("::")
    }
}

/// Uses of a layer listed after the user's own, as "from -> to" lines.
fn layer_violations(krate: &Crate) -> Vec<String> {
    let rank = |module: &ModPath| {
        module
            .first()
            .and_then(|top| krate.layers.iter().position(|l| l == top))
    };
    let mut found = Vec::new();
    for (module, used) in &krate.uses {
        let Some(own) = rank(module) else {
            continue;
        };
        for target in used {
            if rank(target).is_some_and(|theirs| theirs > own) {
                found.push(format!("{} -> {}", name(module), name(target)));
            }
        }
    }
    found
}

/// Files that import each other, directly or round a loop, as loops
/// ("a -> b -> a"). A module's own mod.rs declaring and re-exporting its
/// children is structure, not use, so edges from a module to its
/// descendants are not counted.
fn import_cycles(krate: &Crate) -> Vec<String> {
    let edges: BTreeMap<&ModPath, Vec<&ModPath>> = krate
        .uses
        .iter()
        .map(|(from, to)| {
            let to = to
                .iter()
                .filter(|t| !(t.len() > from.len() && t.starts_with(from)))
                .collect();
            (from, to)
        })
        .collect();
    // Depth-first search with an explicit stack (no recursion), reporting
    // each loop once by its smallest member.
    let mut cycles = BTreeSet::new();
    for start in edges.keys() {
        let mut stack: Vec<(&ModPath, usize)> = vec![(start, 0)];
        let mut on_path: Vec<&ModPath> = vec![start];
        let mut seen: BTreeSet<&ModPath> = BTreeSet::new();
        while let Some((node, next)) = stack.pop() {
            let targets = edges.get(node).map_or(&[][..], Vec::as_slice);
            if let Some(target) = targets.get(next) {
                stack.push((node, next + 1));
                if *target == *start {
                    let members: Vec<String> = on_path.iter().map(|m| name(m)).collect();
                    if members.iter().min() == Some(&name(start)) {
                        cycles.insert(format!("{} -> {}", members.join(" -> "), name(start)));
                    }
                } else if !on_path.contains(target) && seen.insert(target) {
                    stack.push((target, 0));
                    on_path.push(target);
                }
            } else {
                on_path.pop();
            }
        }
    }
    cycles.into_iter().collect()
}

#[test]
fn every_module_is_in_the_layer_list() {
    let krate = read_crate();
    let lib = std::fs::read_to_string(src_dir().join("lib.rs")).unwrap_or_default();
    let declared: Vec<String> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod "))
        .map(|l| l.trim_end_matches(';').to_string())
        .collect();
    assert!(!declared.is_empty(), "lib.rs declares modules");
    let missing: Vec<&String> = declared
        .iter()
        .filter(|m| !krate.layers.contains(m))
        .collect();
    assert!(
        missing.is_empty(),
        "modules missing from lib.rs's numbered layer list: {missing:?}"
    );
}

#[test]
fn each_layer_uses_only_the_layers_below_it() {
    let krate = read_crate();
    let violations = layer_violations(&krate);
    assert!(
        violations.is_empty(),
        "uses of a higher layer (see the list in lib.rs):\n  {}",
        violations.join("\n  ")
    );
}

#[test]
fn no_two_files_import_each_other() {
    let krate = read_crate();
    let cycles = import_cycles(&krate);
    assert!(
        cycles.is_empty(),
        "files that import each other:\n  {}",
        cycles.join("\n  ")
    );
}

#[test]
fn a_store_file_using_the_engine_is_a_violation() {
    // The checks themselves, on a crate made up here: they must see a
    // higher layer used, in a `use` group and in an inline path, and a loop.
    let module = |s: &str| -> ModPath { s.split("::").map(str::to_string).collect() };
    let mut krate = Crate {
        layers: vec!["model".into(), "store".into(), "engine".into()],
        uses: BTreeMap::new(),
    };
    let modules: BTreeSet<ModPath> = ["model", "store", "store::db", "engine", "engine::run"]
        .iter()
        .map(|m| module(m))
        .collect();
    let code = code_of(
        "use crate::model::{Event, run::{RunStatus}};\n\
         use crate::engine::{run::Runner};\n\
         // use crate::engine::ignored;\n\
         fn f() { crate::engine::run::go(); }\n\
         #[cfg(test)]\nmod tests { use crate::engine::x; }\n",
    );
    let used: BTreeSet<ModPath> = paths_in(&code)
        .iter()
        .filter_map(|p| resolve(&module("store::db"), p))
        .filter_map(|t| file_of(&modules, &t))
        .collect();
    assert_eq!(
        used,
        [module("model"), module("engine::run")]
            .into_iter()
            .collect()
    );
    krate.uses.insert(module("store::db"), used);
    krate.uses.insert(
        module("engine::run"),
        [module("store::db")].into_iter().collect(),
    );
    assert_eq!(layer_violations(&krate), ["store::db -> engine::run"]);
    assert_eq!(
        import_cycles(&krate),
        ["engine::run -> store::db -> engine::run"]
    );
}

#[test]
fn the_layer_list_is_read_from_lib_rs() {
    let layers = layers(
        "//! Layers:\n//! 1. [`limits`]: reads.\n//! 2. [`model`]: records.\n//! - [`x`] not numbered\n",
    );
    assert_eq!(layers, ["limits", "model"]);
}
