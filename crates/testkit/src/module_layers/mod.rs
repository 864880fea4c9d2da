//! Module layers: which modules of a crate refer to which (`use crate::x`, `crate::x::Y`,
//! `super::x`), level by level, and the circles among them.
//!
//! A crate whose modules form layers can be read from the bottom up and split along any layer;
//! a circle means two modules can only be understood, tested and changed together. The check
//! reads source text only and depends on nothing but `std`, so a crate's own tests include
//! `module_layers/mod.rs` with `#[path]` instead of building this crate and its dependencies.
//!
//! At every level (the crate root, and each module that has submodules) the graph joins the
//! children of that module: an edge `a -> b` means a file inside `a` names something inside
//! `b`, directly or through a name the parent re-exports from `b`. Test-only code
//! (`#[cfg(test)]` items and modules) is left out, as Cargo leaves dev-dependencies out of its
//! own cycle check.

mod source;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use source::{clean, paths, strip_test_items};

/// One reference from a file of module `from` to module `to`, both children of one parent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// The referring child module.
    pub from: String,
    /// The child module referred to.
    pub to: String,
    /// The file holding the reference.
    pub file: PathBuf,
    /// Its line, from 1.
    pub line: usize,
}

/// A circle among the children of one module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Circle {
    /// The parent module, as a path (`crate`, `crate::framework`).
    pub parent: String,
    /// The modules around the circle; the first is repeated at the end.
    pub modules: Vec<String>,
    /// One reference per step of the circle.
    pub steps: Vec<Reference>,
}

impl fmt::Display for Circle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "in {}: {}", self.parent, self.modules.join(" -> "))?;
        for r in &self.steps {
            write!(
                f,
                "\n  {} -> {}: {}:{}",
                r.from,
                r.to,
                r.file.display(),
                r.line
            )?;
        }
        Ok(())
    }
}

/// Why a crate's sources could not be read.
#[derive(Debug)]
pub struct ReadError {
    /// The file or folder.
    pub path: PathBuf,
    /// The failure.
    pub source: std::io::Error,
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.source)
    }
}

impl std::error::Error for ReadError {}

/// The circles among the modules of the crate whose sources are in `src`, at every level,
/// ordered by parent module.
pub fn circles(src: &Path) -> Result<Vec<Circle>, ReadError> {
    let graph = ModuleGraph::read(src)?;
    Ok(graph.circles())
}

/// The references between sibling modules of the crate in `src`, by parent module path.
pub fn references(src: &Path) -> Result<BTreeMap<String, Vec<Reference>>, ReadError> {
    let graph = ModuleGraph::read(src)?;
    Ok(graph
        .edges
        .into_iter()
        .map(|(parent, refs)| (display_path(&parent), refs))
        .collect())
}

type ModPath = Vec<String>;

fn display_path(p: &[String]) -> String {
    std::iter::once("crate")
        .chain(p.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join("::")
}

struct SourceFile {
    module: ModPath,
    path: PathBuf,
    code: Vec<u8>,
}

struct ModuleGraph {
    /// Every module's children.
    children: BTreeMap<ModPath, BTreeSet<String>>,
    /// References between siblings, by parent.
    edges: BTreeMap<ModPath, Vec<Reference>>,
}

impl ModuleGraph {
    fn read(src: &Path) -> Result<ModuleGraph, ReadError> {
        let mut files = Vec::new();
        collect_files(src, src, &mut files)?;
        let mut test_only: BTreeSet<ModPath> = BTreeSet::new();
        let mut parsed: Vec<SourceFile> = Vec::new();
        for (module, path) in files {
            let text = std::fs::read_to_string(&path).map_err(|source| ReadError {
                path: path.clone(),
                source,
            })?;
            let mut code = clean(text.as_bytes());
            for name in strip_test_items(&mut code) {
                let mut m = module.clone();
                m.push(name);
                test_only.insert(m);
            }
            parsed.push(SourceFile { module, path, code });
        }
        parsed.retain(|f| !test_only.iter().any(|t| f.module.starts_with(t)));
        let mut children: BTreeMap<ModPath, BTreeSet<String>> = BTreeMap::new();
        for f in &parsed {
            for depth in 0..f.module.len() {
                children
                    .entry(f.module[..depth].to_vec())
                    .or_default()
                    .insert(f.module[depth].clone());
            }
        }
        // Names each module re-exports from one of its children.
        let mut reexports: BTreeMap<ModPath, BTreeMap<String, String>> = BTreeMap::new();
        for f in &parsed {
            let Some(kids) = children.get(&f.module) else {
                continue;
            };
            let map = reexports.entry(f.module.clone()).or_default();
            for p in paths(&f.code).into_iter().filter(|p| p.public_use) {
                let abs = resolve(&f.module, &p.segments, true);
                let Some(abs) = abs else { continue };
                if abs.len() > f.module.len()
                    && abs.starts_with(&f.module)
                    && kids.contains(&abs[f.module.len()])
                    && let Some(leaf) = p.leaf
                {
                    map.insert(leaf, abs[f.module.len()].clone());
                }
            }
        }
        let mut edges: BTreeMap<ModPath, Vec<Reference>> = BTreeMap::new();
        for f in &parsed {
            for p in paths(&f.code) {
                let Some(abs) = resolve(&f.module, &p.segments, false) else {
                    continue;
                };
                for depth in 0..f.module.len() {
                    let parent = &f.module[..depth];
                    if abs.len() <= depth || !abs.starts_with(parent) {
                        continue;
                    }
                    let from = &f.module[depth];
                    let named = &abs[depth];
                    let kids = children.get(parent);
                    let to = if kids.is_some_and(|k| k.contains(named)) {
                        Some(named.clone())
                    } else {
                        reexports.get(parent).and_then(|m| m.get(named)).cloned()
                    };
                    if let Some(to) = to.filter(|to| to != from) {
                        edges.entry(parent.to_vec()).or_default().push(Reference {
                            from: from.clone(),
                            to,
                            file: f.path.clone(),
                            line: p.line,
                        });
                    }
                }
            }
        }
        Ok(ModuleGraph { children, edges })
    }

    fn circles(&self) -> Vec<Circle> {
        let mut out = Vec::new();
        for (parent, refs) in &self.edges {
            let mut next: BTreeMap<&str, BTreeMap<&str, &Reference>> = BTreeMap::new();
            for r in refs {
                next.entry(&r.from).or_default().entry(&r.to).or_insert(r);
            }
            let mut seen: BTreeSet<&str> = BTreeSet::new();
            let nodes: Vec<&str> = self
                .children
                .get(parent)
                .map(|k| k.iter().map(String::as_str).collect())
                .unwrap_or_default();
            for &start in &nodes {
                if seen.contains(start) {
                    continue;
                }
                if let Some(path) = shortest_circle(&next, start) {
                    seen.extend(path.iter().copied());
                    let steps = path
                        .windows(2)
                        .filter_map(|w| next.get(w[0]).and_then(|m| m.get(w[1])))
                        .map(|r| (*r).clone())
                        .collect();
                    out.push(Circle {
                        parent: display_path(parent),
                        modules: path.iter().map(|s| s.to_string()).collect(),
                        steps,
                    });
                }
            }
        }
        out
    }
}

/// The shortest path from `start` back to itself, breadth first, with `start` at both ends.
fn shortest_circle<'a>(
    next: &BTreeMap<&'a str, BTreeMap<&'a str, &Reference>>,
    start: &'a str,
) -> Option<Vec<&'a str>> {
    let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
    let mut frontier = vec![start];
    while !frontier.is_empty() {
        let mut later = Vec::new();
        for n in frontier {
            for &m in next.get(n).into_iter().flat_map(|m| m.keys()) {
                if m == start {
                    let mut path = vec![start, n];
                    let mut at = n;
                    while at != start {
                        at = came_from[at];
                        path.push(at);
                    }
                    path.reverse();
                    path.pop();
                    path.push(start);
                    return Some(path);
                }
                if !came_from.contains_key(m) {
                    came_from.insert(m, n);
                    later.push(m);
                }
            }
        }
        frontier = later;
    }
    None
}

/// Every `.rs` file under `dir` with its module path; `src/bin` holds other crates.
fn collect_files(
    root: &Path,
    dir: &Path,
    out: &mut Vec<(ModPath, PathBuf)>,
) -> Result<(), ReadError> {
    let entries = std::fs::read_dir(dir).map_err(|source| ReadError {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut paths: Vec<PathBuf> = Vec::new();
    for e in entries {
        let e = e.map_err(|source| ReadError {
            path: dir.to_path_buf(),
            source,
        })?;
        paths.push(e.path());
    }
    paths.sort();
    for p in paths {
        if p.is_dir() {
            if dir == root && p.file_name().is_some_and(|n| n == "bin") {
                continue;
            }
            collect_files(root, &p, out)?;
            continue;
        }
        if p.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let Ok(rel) = p.strip_prefix(root) else {
            continue;
        };
        let mut module: ModPath = rel
            .with_extension("")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if module.len() == 1 && (module[0] == "lib" || module[0] == "main") {
            module.clear();
        } else if module.last().is_some_and(|l| l == "mod") {
            module.pop();
        }
        out.push((module, p));
    }
    Ok(())
}

/// The absolute module path `segments` names from a file of `module`; relative first segments
/// (a child's name) are taken only when `relative` (in a `pub use`).
fn resolve(module: &[String], segments: &[String], relative: bool) -> Option<ModPath> {
    let first = segments.first()?;
    let mut at: ModPath;
    let mut rest = segments;
    match first.as_str() {
        "crate" => {
            at = Vec::new();
            rest = &rest[1..];
        }
        "self" => {
            at = module.to_vec();
            rest = &rest[1..];
        }
        "super" => {
            at = module.to_vec();
            while rest.first().is_some_and(|s| s == "super") {
                at.pop()?;
                rest = &rest[1..];
            }
        }
        _ if relative => at = module.to_vec(),
        _ => return None,
    }
    at.extend(rest.iter().cloned());
    Some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, files: &[(&str, &str)]) {
        for (name, text) in files {
            let p = dir.join(name);
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent).unwrap();
            }
            std::fs::write(p, text).unwrap();
        }
    }

    #[test]
    fn finds_a_circle_through_a_reexport_and_ignores_tests_and_comments() {
        let dir = tempdir("circle");
        write(
            &dir,
            &[
                ("lib.rs", "pub mod a;\npub mod b;\npub mod c;\n"),
                ("a/mod.rs", "mod x;\nmod y;\npub use x::X;\n"),
                ("a/x.rs", "use super::y::Y;\npub struct X;\n"),
                (
                    "a/y.rs",
                    "pub struct Y;\n// use super::X;\nconst S: &str = \"crate::b\";\n",
                ),
                ("b.rs", "use crate::{a::X, c};\n"),
                (
                    "c.rs",
                    "#[cfg(test)]\nmod tests { use crate::b; }\nfn f() -> crate::a::X { todo!() }\n",
                ),
            ],
        );
        assert!(circles(&dir).unwrap().is_empty());
        write(&dir, &[("a/y.rs", "pub struct Y(crate::a::X);\n")]);
        let found = circles(&dir).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].parent, "crate::a");
        assert_eq!(found[0].modules, ["x", "y", "x"]);
        write(&dir, &[("a/x.rs", "pub struct X(crate::b::B);\n")]);
        let found = circles(&dir).unwrap();
        assert_eq!(found[0].parent, "crate");
        assert_eq!(found[0].modules, ["a", "b", "a"]);
        assert!(found[0].to_string().contains("a -> b: "), "{}", found[0]);
    }

    fn tempdir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("module-layers-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
