//! Issue 21's acceptance on a real kube-apiserver (the real-cluster tier; skipped, saying so,
//! where `KUBEBUILDER_ASSETS` provides none): a StatefulSet-like gang of pods with required
//! anti-affinity and claims on zonal local volumes lands one pod per node, each in its
//! volume's zone; the claim still waiting for its first consumer is bound by the scheduler to
//! the only volume that fits, with the permissions deploy/ gives it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod real;

use std::collections::BTreeSet;

use real::{Volcano, eventually, install, kubectl, text};
use volcano_apiserver::kubelet::NodeSpec;
use volcano_testkit::kubelet::{ApiKubelets, KubeletOptions};
use volcano_testkit::{Assets, RealControlPlane};

const ZONE: &str = "topology.kubernetes.io/zone";

/// A local volume of class `local-wait` that only nodes of `zone` reach.
fn volume(name: &str, zone: &str, size: &str) -> String {
    format!(
        "apiVersion: v1
kind: PersistentVolume
metadata:
  name: {name}
spec:
  capacity:
    storage: {size}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: local-wait
  local:
    path: /mnt/disks/{name}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions:
        - key: {ZONE}
          operator: In
          values: [{zone}]
"
    )
}

/// The claim a StatefulSet's volumeClaimTemplate `data` gives its pod `web-<i>`.
fn claim(i: usize) -> String {
    format!(
        "apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data-web-{i}
  namespace: default
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: local-wait
  resources:
    requests:
      storage: 1Gi
"
    )
}

/// The pod `web-<i>` of a StatefulSet `web` whose pods keep off each other's nodes.
fn pod(i: usize) -> String {
    format!(
        "apiVersion: v1
kind: Pod
metadata:
  name: web-{i}
  namespace: default
  labels:
    app: web
  annotations:
    scheduling.k8s.io/group-name: web
spec:
  schedulerName: volcano
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - labelSelector:
          matchLabels:
            app: web
        topologyKey: kubernetes.io/hostname
  containers:
  - name: web
    image: registry.k8s.io/nginx-slim:0.8
    resources:
      requests:
        cpu: 100m
        memory: 64Mi
    volumeMounts:
    - name: data
      mountPath: /data
  volumes:
  - name: data
    persistentVolumeClaim:
      claimName: data-web-{i}
"
    )
}

const STORAGE_CLASS: &str = "apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: local-wait
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
";

const POD_GROUP: &str = "apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata:
  name: web
  namespace: default
spec:
  minMember: 3
  queue: default
";

fn apply(admin: &std::path::Path, dir: &std::path::Path, name: &str, yaml: &str) {
    let file = dir.join(format!("{name}.yaml"));
    std::fs::write(&file, yaml).unwrap();
    let out = kubectl(admin, &["apply", "-f", file.to_str().unwrap()]);
    assert!(out.status.success(), "{name}: {}", text(&out));
}

fn get(admin: &std::path::Path, what: &[&str], path: &str) -> String {
    let mut args = vec!["get"];
    args.extend_from_slice(what);
    let jsonpath = format!("jsonpath={path}");
    args.extend(["-o", jsonpath.as_str()]);
    let out = kubectl(admin, &args);
    assert!(out.status.success(), "get {what:?}: {}", text(&out));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Binds claim `data-web-<i>` to volume `pv` as the PV controller did when the set's
/// volumes were first provisioned: the volume's claimRef and the claim's volumeName with
/// `bind-completed` (the PV controller running here then sets both phases Bound).
fn prebind(admin: &std::path::Path, i: usize, pv: &str) {
    let claim = format!("data-web-{i}");
    let uid = get(admin, &["pvc", &claim], "{.metadata.uid}");
    let patches = [
        (
            vec!["patch", "pv", pv, "--type=merge", "-p"],
            format!(
                r#"{{"metadata":{{"annotations":{{"pv.kubernetes.io/bound-by-controller":"yes"}}}},"spec":{{"claimRef":{{"apiVersion":"v1","kind":"PersistentVolumeClaim","namespace":"default","name":"{claim}","uid":"{uid}"}}}}}}"#
            ),
        ),
        (
            vec!["patch", "pvc", claim.as_str(), "--type=merge", "-p"],
            format!(
                r#"{{"metadata":{{"annotations":{{"pv.kubernetes.io/bind-completed":"yes","pv.kubernetes.io/bound-by-controller":"yes"}}}},"spec":{{"volumeName":"{pv}"}}}}"#
            ),
        ),
    ];
    for (args, patch) in patches {
        let mut args = args;
        args.push(patch.as_str());
        let out = kubectl(admin, &args);
        assert!(out.status.success(), "{args:?}: {}", text(&out));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateful_set_with_anti_affinity_and_zonal_claims_lands_one_pod_per_node_in_its_volumes_zone()
 {
    let test = "a_stateful_set_with_anti_affinity_and_zonal_claims_lands_one_pod_per_node_in_its_volumes_zone";
    let Some(assets) = Assets::or_skip(test) else {
        return;
    };
    if assets.kube_controller_manager.is_none() {
        // Without the PV binder no volume ever becomes Available, so none can be chosen.
        eprintln!("skipped {test}: no kube-controller-manager in KUBEBUILDER_ASSETS");
        return;
    }
    let plane = RealControlPlane::start(&assets).await.unwrap();
    let admin = plane.kubeconfig_path();
    let dir = plane.dir().to_path_buf();
    install(&admin);
    // a1 and b1 are four times the size of a2 and b2, so the node scores alone would stack
    // the pods of a zone on its big node: only the anti-affinity keeps them apart.
    let nodes: Vec<NodeSpec> = [
        ("a1", "a", "16", "32Gi"),
        ("a2", "a", "4", "8Gi"),
        ("b1", "b", "16", "32Gi"),
        ("b2", "b", "4", "8Gi"),
    ]
    .into_iter()
    .map(|(name, zone, cpu, memory)| {
        NodeSpec::new(name)
            .cpu(cpu)
            .memory(memory)
            .label(ZONE, zone)
    })
    .collect();
    let _kubelets = ApiKubelets::start(plane.admin().unwrap(), &nodes, KubeletOptions::default())
        .await
        .unwrap();

    // The storage, before the scheduler starts: zone a holds the volumes web-0 and web-1 were
    // given when the set first ran; zone b one free volume that fits data-web-2 and one too
    // small for it; no free volume in zone a.
    apply(&admin, &dir, "class", STORAGE_CLASS);
    for (name, zone, size) in [
        ("pv-a-0", "a", "1Gi"),
        ("pv-a-1", "a", "1Gi"),
        ("pv-b-0", "b", "1Gi"),
        ("pv-b-small", "b", "512Mi"),
    ] {
        apply(&admin, &dir, name, &volume(name, zone, size));
    }
    for i in 0..3 {
        apply(&admin, &dir, &format!("data-web-{i}"), &claim(i));
    }
    prebind(&admin, 0, "pv-a-0");
    prebind(&admin, 1, "pv-a-1");
    let phases = |admin: &std::path::Path| {
        [
            get(admin, &["pv", "pv-b-0"], "{.status.phase}"),
            get(admin, &["pv", "pv-b-small"], "{.status.phase}"),
            get(admin, &["pvc", "data-web-0"], "{.status.phase}"),
            get(admin, &["pvc", "data-web-1"], "{.status.phase}"),
            get(admin, &["pvc", "data-web-2"], "{.status.phase}"),
        ]
    };
    let (ready, seen) = eventually(30, || {
        let p = phases(&admin);
        (
            p == ["Available", "Available", "Bound", "Bound", "Pending"],
            format!("{p:?}"),
        )
    })
    .await;
    assert!(
        ready,
        "the PV controller readies the storage: {seen}\n{}",
        std::fs::read_to_string(plane.dir().join("kube-controller-manager.log"))
            .unwrap_or_default()
    );

    let volcano = Volcano::start(&plane);
    let logs = || {
        format!(
            "scheduler log:\n{}\ncontrollers log:\n{}",
            volcano.log("volcano-scheduler"),
            volcano.log("volcano-controllers")
        )
    };

    // The PodGroup write waits for the webhook server, and the pods for the namespace's
    // default ServiceAccount, which kube-controller-manager creates.
    let group = dir.join("podgroup.yaml");
    std::fs::write(&group, POD_GROUP).unwrap();
    let (created, seen) = eventually(30, || {
        let out = kubectl(&admin, &["apply", "-f", group.to_str().unwrap()]);
        (out.status.success(), text(&out))
    })
    .await;
    assert!(created, "{seen}\n{}", logs());
    for i in 0..3 {
        let file = dir.join(format!("web-{i}.yaml"));
        std::fs::write(&file, pod(i)).unwrap();
        let (created, seen) = eventually(30, || {
            let out = kubectl(&admin, &["apply", "-f", file.to_str().unwrap()]);
            (out.status.success(), text(&out))
        })
        .await;
        assert!(created, "web-{i}: {seen}");
    }

    let placed = |admin: &std::path::Path| -> Vec<String> {
        (0..3)
            .map(|i| get(admin, &["pod", &format!("web-{i}")], "{.spec.nodeName}"))
            .collect()
    };
    let (bound, seen) = eventually(60, || {
        let nodes = placed(&admin);
        (nodes.iter().all(|n| !n.is_empty()), format!("{nodes:?}"))
    })
    .await;
    let pending = text(&kubectl(
        &admin,
        &["get", "pods", "-o", "wide", "--show-labels"],
    ));
    assert!(
        bound,
        "nodes {seen}\n{pending}\npod conditions: {}\n{}",
        get(&admin, &["pods"], "{..status.conditions}"),
        logs()
    );

    let nodes = placed(&admin);
    eprintln!("web-0..2 bound to {nodes:?}");
    let distinct: BTreeSet<&String> = nodes.iter().collect();
    assert_eq!(distinct.len(), 3, "one pod per node: {nodes:?}");
    let zone_of = |node: &str| {
        get(
            &admin,
            &["node", node],
            "{.metadata.labels.topology\\.kubernetes\\.io/zone}",
        )
    };
    let zones: Vec<String> = nodes.iter().map(|n| zone_of(n)).collect();
    assert_eq!(
        zones,
        ["a", "a", "b"],
        "each pod in its volume's zone: nodes {nodes:?}"
    );

    // The waiting claim is bound by the scheduler as kube-scheduler's volume binder binds it:
    // the volume's claimRef, then the claim's volumeName marked bind-completed.
    assert_eq!(
        get(&admin, &["pvc", "data-web-2"], "{.spec.volumeName}"),
        "pv-b-0",
        "{}",
        logs()
    );
    assert_eq!(
        get(
            &admin,
            &["pvc", "data-web-2"],
            "{.metadata.annotations.pv\\.kubernetes\\.io/bind-completed}"
        ),
        "yes"
    );
    assert_eq!(
        get(&admin, &["pv", "pv-b-0"], "{.spec.claimRef.name}"),
        "data-web-2"
    );
    assert_eq!(
        get(&admin, &["pv", "pv-b-0"], "{.spec.claimRef.uid}"),
        get(&admin, &["pvc", "data-web-2"], "{.metadata.uid}")
    );
    // The PV controller finds the scheduler's binding consistent and completes it.
    let (completed, seen) = eventually(30, || {
        let p = [
            get(&admin, &["pvc", "data-web-2"], "{.status.phase}"),
            get(&admin, &["pv", "pv-b-0"], "{.status.phase}"),
        ];
        (p == ["Bound", "Bound"], format!("{p:?}"))
    })
    .await;
    assert!(completed, "{seen}");
    // The pre-bound pairs stay as they were; the small volume stays free.
    assert_eq!(
        get(&admin, &["pvc", "data-web-0"], "{.spec.volumeName}"),
        "pv-a-0"
    );
    assert_eq!(
        get(&admin, &["pvc", "data-web-1"], "{.spec.volumeName}"),
        "pv-a-1"
    );
    assert_eq!(get(&admin, &["pv", "pv-b-small"], "{.spec.claimRef}"), "");

    // deploy/'s RBAC was enough for everything the scheduler did.
    let scheduler = volcano.log("volcano-scheduler");
    assert!(
        !scheduler.to_lowercase().contains("forbidden"),
        "{scheduler}"
    );
}
