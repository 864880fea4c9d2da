//! SCENARIO.md keeps up with the scenario decoder: every kind the loader accepts has a row in the
//! document's table of kinds, with the apiVersion the loader requires, and the table names no
//! kind the loader refuses.
//!
//! The loader's own list is read from what it tells a user who writes an unknown kind, so a kind
//! added to the decoder without a line of documentation fails here.

use std::path::{Path, PathBuf};

use volcano_api::scenario::load_str;

/// The heading of the section whose table lists the kinds.
const KINDS_HEADING: &str = "## Kinds";

fn scenario_md() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../SCENARIO.md");
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: cannot read: {e}", path.display()))
}

/// The loader's message for `kind` under `api_version`.
fn load_error(api_version: &str, kind: &str) -> String {
    let text = format!("apiVersion: {api_version}\nkind: {kind}\nmetadata: {{name: x}}\n");
    match load_str(Path::new("probe.yaml"), &text) {
        Ok(_) => panic!("{kind} under apiVersion {api_version} was accepted"),
        Err(e) => e.to_string(),
    }
}

/// Every kind the loader accepts, from its unknown-kind message
/// (`...; a scenario holds Node, Pod, ... and CronJob`).
fn accepted_kinds() -> Vec<String> {
    let message = load_error("example.com/v1", "NoSuchKind");
    let list = message
        .split("a scenario holds ")
        .nth(1)
        .unwrap_or_else(|| panic!("the unknown-kind message lists no kinds: {message}"));
    let kinds: Vec<String> = list
        .split([',', ';'])
        .flat_map(|part| part.split(" and "))
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .map(str::to_string)
        .collect();
    assert!(
        kinds.len() > 10,
        "the unknown-kind message lists too few kinds: {message}"
    );
    kinds
}

/// The apiVersion the loader requires for `kind` (`... Kind needs apiVersion X`).
fn required_api_version(kind: &str) -> String {
    let message = load_error("wrong.example.com/v0", kind);
    let marker = format!("{kind} needs apiVersion ");
    message
        .split(&marker)
        .nth(1)
        .map(|rest| {
            rest.split_whitespace()
                .next()
                .unwrap_or_default()
                .to_string()
        })
        .unwrap_or_else(|| panic!("no required apiVersion for {kind}: {message}"))
}

/// The rows of the kinds table (the first table after the heading) as (apiVersion, kind): the
/// first cell reads `` `v1` `Pod` ``.
fn documented_kinds(doc: &str) -> Vec<(String, String)> {
    let section = doc
        .split(KINDS_HEADING)
        .nth(1)
        .unwrap_or_else(|| panic!("SCENARIO.md has no `{KINDS_HEADING}` section"));
    // The first table of the section; later tables there list other things.
    section
        .lines()
        .skip_while(|line| !line.starts_with('|'))
        .take_while(|line| line.starts_with('|'))
        .filter_map(|line| line.strip_prefix('|'))
        .filter_map(|row| row.split('|').next())
        .filter_map(|cell| {
            let ticked: Vec<&str> = cell.split('`').skip(1).step_by(2).collect();
            match ticked.as_slice() {
                [api_version, kind] => Some((api_version.to_string(), kind.to_string())),
                _ => None,
            }
        })
        .collect()
}

#[test]
fn every_kind_the_loader_accepts_is_documented_with_its_api_version() {
    let doc = scenario_md();
    let documented = documented_kinds(&doc);
    for kind in accepted_kinds() {
        let api_version = required_api_version(&kind);
        assert!(
            documented.contains(&(api_version.clone(), kind.clone())),
            "SCENARIO.md's kinds table has no row `{api_version}` `{kind}`; it has {documented:?}"
        );
    }
}

#[test]
fn the_kinds_table_names_only_kinds_the_loader_accepts() {
    let accepted = accepted_kinds();
    let documented = documented_kinds(&scenario_md());
    assert!(!documented.is_empty(), "SCENARIO.md's kinds table is empty");
    for (api_version, kind) in documented {
        assert!(
            accepted.contains(&kind),
            "SCENARIO.md documents `{api_version}` `{kind}`, which the loader refuses"
        );
    }
}
