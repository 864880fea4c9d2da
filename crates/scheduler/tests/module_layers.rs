//! The scheduler's modules form layers: no circle among the top-level modules, nor among the
//! submodules of any module (`framework`'s in particular), so the framework can be read and
//! tested without the plugins and actions built on it.

#[path = "../../testkit/src/module_layers/mod.rs"]
#[allow(dead_code)]
mod module_layers;

use std::path::Path;

#[test]
fn scheduler_modules_have_no_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let circles = module_layers::circles(&src).unwrap();
    let text: Vec<String> = circles.iter().map(ToString::to_string).collect();
    assert!(circles.is_empty(), "module circles:\n{}", text.join("\n"));
}

#[test]
fn framework_names_neither_plugins_nor_actions() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let refs = module_layers::references(&src).unwrap();
    let upward: Vec<String> = refs
        .get("crate")
        .into_iter()
        .flatten()
        .filter(|r| {
            r.from == "framework" && matches!(r.to.as_str(), "plugins" | "actions" | "registry")
        })
        .map(|r| format!("{}:{} -> {}", r.file.display(), r.line, r.to))
        .collect();
    assert!(
        upward.is_empty(),
        "framework reaches up:\n{}",
        upward.join("\n")
    );
}
