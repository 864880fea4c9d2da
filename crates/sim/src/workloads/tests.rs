// A fixture that does not load should fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use volcano_api::Objects;
use volcano_api::keys;

use super::start_workloads;

fn load(text: &str) -> Objects {
    volcano_api::scenario::load_str(Path::new("w.yaml"), text)
        .unwrap_or_else(|e| panic!("{e}"))
        .objects
}

const DEPLOYMENT: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations: {scheduling.volcano.sh/group-min-member: "3", kubectl.kubernetes.io/last-applied-configuration: "{}"}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      schedulerName: volcano
      containers: [{name: c, resources: {requests: {cpu: "1"}}}]
"#;

#[test]
fn a_deployment_gets_a_replica_set_with_its_annotations_and_three_pods() {
    let mut o = load(DEPLOYMENT);
    start_workloads(&mut o);
    assert_eq!(o.replica_sets.len(), 1);
    let rs = &o.replica_sets[0];
    let a = rs.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(
        a.get(keys::GROUP_MIN_MEMBER).map(String::as_str),
        Some("3"),
        "the Deployment's annotations reach its ReplicaSet"
    );
    assert!(!a.contains_key("kubectl.kubernetes.io/last-applied-configuration"));
    let rs_uid = rs.metadata.uid.clone().unwrap();
    assert_eq!(o.pods.len(), 3);
    let rs_name = rs.metadata.name.clone().unwrap();
    for p in &o.pods {
        let owner = &p.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.uid.as_str()),
            ("ReplicaSet", rs_uid.as_str())
        );
        assert!(
            p.metadata
                .name
                .as_deref()
                .unwrap()
                .starts_with(&format!("{rs_name}-"))
        );
        assert_eq!(p.metadata.namespace.as_deref(), Some("default"));
    }
    let again = {
        let mut o2 = load(DEPLOYMENT);
        start_workloads(&mut o2);
        o2.pods
            .iter()
            .map(|p| p.metadata.name.clone())
            .collect::<Vec<_>>()
    };
    let names: Vec<_> = o.pods.iter().map(|p| p.metadata.name.clone()).collect();
    assert_eq!(names, again, "names are reproducible");

    start_workloads(&mut o);
    assert_eq!(
        (o.replica_sets.len(), o.pods.len()),
        (1, 3),
        "nothing more the second time"
    );
}

#[test]
fn a_stateful_set_gets_ordinal_pods_of_its_update_revision() {
    let mut o = load(
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db, namespace: data}\nspec:\n  replicas: 2\n  serviceName: db\n  selector: {matchLabels: {app: db}}\n  template:\n    metadata: {labels: {app: db}}\n    spec: {containers: [{name: c}]}\n",
    );
    start_workloads(&mut o);
    let names: Vec<_> = o
        .pods
        .iter()
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    assert_eq!(names, ["db-0", "db-1"]);
    let revision = o.stateful_sets[0]
        .status
        .as_ref()
        .and_then(|s| s.update_revision.clone())
        .unwrap();
    for p in &o.pods {
        let labels = p.metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels.get("controller-revision-hash"), Some(&revision));
        assert_eq!(labels.get("app").map(String::as_str), Some("db"));
    }
}
