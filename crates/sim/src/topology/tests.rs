use super::*;

fn objects(text: &str) -> Objects {
    volcano_api::scenario::load_str(std::path::Path::new("t.yaml"), text)
        .unwrap_or_else(|e| panic!("{e}"))
        .objects
}

#[test]
fn a_gang_is_in_one_leaf_only_when_every_node_is() {
    let spec = crate::generate::GenerateSpec {
        nodes: 8,
        topology: crate::generate::parse_topology("leaf:4,spine:2").unwrap_or_default(),
        jobs: 0,
        ..Default::default()
    };
    let objects = crate::generate::generate(&spec, 1);
    let Some(d) = Domains::of(&objects) else {
        panic!("generated HyperNodes form a tree")
    };
    assert!(d.in_one_leaf(&["cpu-0", "cpu-3"]));
    assert!(!d.in_one_leaf(&["cpu-3", "cpu-4"]));
    assert!(!d.in_one_leaf(&["cpu-0", "elsewhere"]));
    assert!(!d.in_one_leaf::<&str>(&[]));
    assert_eq!(d.leaf_of("cpu-5"), d.tree.get("leaf-1"));
}

#[test]
fn no_hyper_nodes_no_domains() {
    let o = objects("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n");
    assert!(Domains::of(&o).is_none());
}
