//! Every crate of the workspace checked for module circles: at every level of every crate,
//! sibling modules form layers, so each can be read, tested and changed from the bottom up.
//! The scheduler's own test asserts the same for it alone.

use std::path::Path;

use volcano_testkit::module_layers::circles;

/// The crates under `crates/`, each checked from its `src`.
const CRATES: &[&str] = &[
    "api",
    "scheduler",
    "controllers",
    "sim",
    "runtime",
    "apiserver",
    "cli",
    "fuzz",
    "testkit",
];

#[test]
fn no_module_circle_in_any_crate() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    for name in CRATES {
        let src = crates.join(name).join("src");
        for c in circles(&src).unwrap() {
            found.push(format!("{name}: {c}"));
        }
    }
    assert!(found.is_empty(), "module circles:\n{}", found.join("\n"));
}
