//! Issue 23 on a real kube-apiserver (the real-cluster tier; skipped, saying so, where
//! `KUBEBUILDER_ASSETS` provides none): with Volcano's `volcano-controller-configmap` turning
//! label discovery on, the controller manager makes the HyperNodes the nodes' labels describe,
//! with the permissions deploy/ gives it; a Volcano Job whose network topology is
//! `{mode: hard, highestTierAllowed: 1}` has all its pods placed inside one tier-1 HyperNode.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod real;

use std::collections::BTreeMap;

use real::{Volcano, eventually, install, kubectl, text};
use volcano_apiserver::kubelet::NodeSpec;
use volcano_testkit::kubelet::{ApiKubelets, KubeletOptions};
use volcano_testkit::{Assets, RealControlPlane};

const TOR: &str = "volcano.sh/tor";
const SPINE: &str = "volcano.sh/spine";

/// Volcano's label discovery configuration, as its user guide writes it.
const DISCOVERY: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: volcano-controller-configmap
  namespace: volcano-system
data:
  volcano-controller.conf: |
    networkTopologyDiscovery:
      - source: label
        enabled: true
        config:
          networkTopologyTypes:
            spine-leaf:
              - nodeLabel: volcano.sh/spine
              - nodeLabel: volcano.sh/tor
              - nodeLabel: kubernetes.io/hostname
";

/// Two pods of 3 CPU that must share one leaf switch. The roomiest nodes (node-0 and node-2)
/// are under different switches, so a placement blind to the topology splits the pair.
const JOB: &str = "apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: same-leaf
  namespace: default
spec:
  schedulerName: volcano
  queue: default
  minAvailable: 2
  networkTopology:
    mode: hard
    highestTierAllowed: 1
  tasks:
    - name: worker
      replicas: 2
      template:
        spec:
          restartPolicy: Never
          containers:
            - name: sleep
              image: busybox:1.36
              command: [\"sh\", \"-c\", \"sleep 60\"]
              resources:
                requests:
                  cpu: 3
                  memory: 32Mi
";

fn json(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null)
}

/// A real control plane with deploy/ installed, four nodes under two leaf switches of one
/// spine (node-0 and node-2 the roomiest), the discovery ConfigMap, and Volcano running; waits
/// for the HyperNodes label discovery makes and checks them. None where the tier is skipped.
async fn discovered(test: &str) -> Option<(RealControlPlane, ApiKubelets, Volcano)> {
    let assets = Assets::or_skip(test)?;
    let plane = RealControlPlane::start(&assets).await.unwrap();
    let admin = plane.kubeconfig_path();
    install(&admin);
    let leaf = |i: usize| if i < 2 { "s0" } else { "s1" };
    let nodes: Vec<NodeSpec> = (0..4)
        .map(|i| {
            NodeSpec::new(format!("node-{i}"))
                .cpu(if i % 2 == 0 { "8" } else { "4" })
                .memory("16Gi")
                .label(TOR, leaf(i))
                .label(SPINE, "c0")
        })
        .collect();
    let kubelets = ApiKubelets::start(plane.admin().unwrap(), &nodes, KubeletOptions::default())
        .await
        .unwrap();
    let conf = plane.dir().join("discovery.yaml");
    std::fs::write(&conf, DISCOVERY).unwrap();
    let applied = kubectl(&admin, &["apply", "-f", conf.to_str().unwrap()]);
    assert!(applied.status.success(), "{}", text(&applied));

    let volcano = Volcano::start(&plane);

    // The HyperNodes Volcano's label discoverer makes: a leaf per switch over its nodes, the
    // spine over the leaves, each marked as discovered by `label`, with its node count.
    let (found, seen) = eventually(60, || {
        let out = kubectl(
            &admin,
            &[
                "get",
                "hypernodes",
                "-l",
                "volcano.sh/network-topology-source=label",
                "-o",
                "json",
            ],
        );
        let items = json(&out)["items"].as_array().cloned().unwrap_or_default();
        let mut seen: Vec<String> = items
            .iter()
            .map(|h| {
                let members: Vec<&str> = h["spec"]["members"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|m| m["selector"]["exactMatch"]["name"].as_str())
                    .collect();
                let leaf_members = if h["spec"]["tier"] == 1 {
                    members.join(",")
                } else {
                    members.len().to_string()
                };
                format!(
                    "{} tier{} {} {} [{}] count={}",
                    h["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .starts_with("hypernode-spine-leaf-tier"),
                    h["spec"]["tier"],
                    h["spec"]["tierName"].as_str().unwrap_or_default(),
                    h["metadata"]["labels"][TOR]
                        .as_str()
                        .or(h["metadata"]["labels"][SPINE].as_str())
                        .unwrap_or_default(),
                    leaf_members,
                    h["status"]["nodeCount"]
                )
            })
            .collect();
        seen.sort();
        let want = [
            "true tier1 volcano.sh/tor s0 [node-0,node-1] count=2",
            "true tier1 volcano.sh/tor s1 [node-2,node-3] count=2",
            "true tier2 volcano.sh/spine c0 [2] count=4",
        ];
        (seen == want, format!("{seen:#?}"))
    })
    .await;
    assert!(
        found,
        "{seen}\ncontrollers log:\n{}",
        volcano.log("volcano-controllers")
    );

    Some((plane, kubelets, volcano))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn label_discovery_makes_the_hyper_nodes_of_the_nodes_labels() {
    let Some((plane, _kubelets, volcano)) =
        discovered("label_discovery_makes_the_hyper_nodes_of_the_nodes_labels").await
    else {
        return;
    };
    // The webhook refuses a HyperNode whose pattern does not compile, in Volcano's words.
    let bad = plane.dir().join("bad-hypernode.yaml");
    std::fs::write(
        &bad,
        "apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata:\n  name: bad\n\
         spec:\n  tier: 1\n  members:\n  - type: Node\n    selector:\n      \
         regexMatch:\n        pattern: node-(\n",
    )
    .unwrap();
    let refused = kubectl(
        &plane.kubeconfig_path(),
        &["create", "-f", bad.to_str().unwrap()],
    );
    assert!(!refused.status.success(), "{}", text(&refused));
    assert!(
        text(&refused).contains(
            "admission webhook \"validatehypernode.volcano.sh\" denied the request: \
             spec.members[0].selector.regexMatch.pattern: member regexMatch pattern is invalid"
        ),
        "{}\nwebhook log:\n{}",
        text(&refused),
        volcano.log("volcano-admission")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hard_network_topology_job_has_all_its_pods_in_one_tier_1_hyper_node() {
    let Some((plane, _kubelets, volcano)) =
        discovered("a_hard_network_topology_job_has_all_its_pods_in_one_tier_1_hyper_node").await
    else {
        return;
    };
    let admin = plane.kubeconfig_path();
    // The scheduler keeps the gang inside one leaf switch.
    let job = plane.dir().join("same-leaf.yaml");
    std::fs::write(&job, JOB).unwrap();
    let (queued, seen) = eventually(20, || {
        let out = kubectl(&admin, &["apply", "-f", job.to_str().unwrap()]);
        (out.status.success(), text(&out))
    })
    .await;
    assert!(queued, "{seen}");
    let (bound, placed) = eventually(60, || {
        let out = kubectl(
            &admin,
            &[
                "get",
                "pods",
                "-n",
                "default",
                "-l",
                "volcano.sh/job-name=same-leaf",
                "-o",
                "json",
            ],
        );
        let placed: BTreeMap<String, String> = json(&out)["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| {
                Some((
                    p["metadata"]["name"].as_str()?.to_string(),
                    p["spec"]["nodeName"].as_str()?.to_string(),
                ))
            })
            .collect();
        (placed.len() == 2, format!("{placed:?}"))
    })
    .await;
    assert!(
        bound,
        "pods placed: {placed}\nscheduler log:\n{}",
        volcano.log("volcano-scheduler")
    );
    let in_s0 = placed.matches("node-0").count() + placed.matches("node-1").count();
    assert!(
        in_s0 == 0 || in_s0 == 2,
        "the gang straddles the leaf switches (s0: node-0, node-1; s1: node-2, node-3): {placed}"
    );
}
