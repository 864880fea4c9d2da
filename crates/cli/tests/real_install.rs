//! The install a platform engineer does, on a real kube-apiserver (the real-cluster tier; skipped,
//! saying so, where `KUBEBUILDER_ASSETS` provides none): `kubectl apply -f deploy/`, the
//! `volcano scheduler` and `volcano controller-manager` binaries run with the tokens of
//! deploy/'s ServiceAccounts, `kubectl apply -f deploy/examples/job.yaml` runs to completion,
//! the writes carry the components' names as field managers, a JobFlow runs its two steps in
//! order, and the default queue stays.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod real;

use real::{Volcano, eventually, install, kubectl, repo, text};
use volcano_apiserver::kubelet::NodeSpec;
use volcano_testkit::kubelet::{ApiKubelets, KubeletOptions};
use volcano_testkit::{Assets, RealControlPlane};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_apply_of_deploy_runs_the_example_job_with_the_service_accounts_permissions() {
    let test = "kubectl_apply_of_deploy_runs_the_example_job_with_the_service_accounts_permissions";
    let Some(assets) = Assets::or_skip(test) else {
        return;
    };
    let plane = RealControlPlane::start(&assets).await.unwrap();
    let admin = plane.kubeconfig_path();
    install(&admin);
    let _kubelets = ApiKubelets::start(
        plane.admin().unwrap(),
        &[NodeSpec::new("node-0").cpu("4").memory("8Gi")],
        KubeletOptions::default(),
    )
    .await
    .unwrap();

    let volcano = Volcano::start(&plane);

    let example = repo().join("deploy/examples/job.yaml");
    let (queued, seen) = eventually(20, || {
        let out = kubectl(&admin, &["apply", "-f", example.to_str().unwrap()]);
        (out.status.success(), text(&out))
    })
    .await;
    assert!(
        queued,
        "{seen}\nwebhook log:\n{}",
        volcano.log("volcano-admission")
    );
    let (done, phase) = eventually(60, || {
        let out = kubectl(
            &admin,
            &[
                "get",
                "vcjob",
                "hello-gang",
                "-o",
                "jsonpath={.status.state.phase}",
            ],
        );
        let phase = text(&out);
        (phase == "Completed", phase)
    })
    .await;
    assert!(
        done,
        "phase {phase}\nscheduler log:\n{}\ncontrollers log:\n{}",
        volcano.log("volcano-scheduler"),
        volcano.log("volcano-controllers")
    );

    // Who wrote what is named: the API server takes the field manager from the user agent.
    let managers = |what: &[&str]| {
        let mut args = vec!["get"];
        args.extend_from_slice(what);
        args.extend([
            "--show-managed-fields",
            "-o",
            "jsonpath={..managedFields[*].manager}",
        ]);
        text(&kubectl(&admin, &args))
    };
    let job = managers(&["vcjob", "hello-gang"]);
    assert!(job.contains("volcano-controllers"), "{job}");
    let queue = managers(&["queue", "default"]);
    assert!(queue.contains("volcano-scheduler"), "{queue}");
    assert!(
        !format!("{job} {queue}").contains("unknown"),
        "{job} {queue}"
    );

    // A JobFlow, with the controllers' own permissions: each step's Job is made from its
    // template once the step before has completed, and both statuses are written.
    let flow = plane.dir().join("flow.yaml");
    let template = |name: &str| {
        format!(
            "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobTemplate\nmetadata:\n  name: {name}\n\
             spec:\n  schedulerName: volcano\n  minAvailable: 1\n  tasks:\n  - name: w\n    replicas: 1\n\
             \x20   template:\n      spec:\n        restartPolicy: Never\n        containers:\n\
             \x20       - name: main\n          image: busybox:1.36\n          command: [sleep, \"1\"]\n\
             \x20         resources: {{requests: {{cpu: 100m}}}}\n---\n"
        )
    };
    std::fs::write(
        &flow,
        format!(
            "{}{}apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata:\n  name: etl\n\
             spec:\n  jobRetainPolicy: retain\n  flows:\n  - name: extract\n\
             \x20 - name: load\n    dependsOn:\n      targets: [extract]\n",
            template("extract"),
            template("load")
        ),
    )
    .unwrap();
    let applied = kubectl(&admin, &["apply", "-f", flow.to_str().unwrap()]);
    assert!(applied.status.success(), "{}", text(&applied));
    let (succeeded, seen) = eventually(120, || {
        let out = kubectl(
            &admin,
            &[
                "get",
                "jobflow",
                "etl",
                "-o",
                "jsonpath={.status.state.phase}",
            ],
        );
        let phase = text(&out);
        (phase == "Succeed", phase)
    })
    .await;
    assert!(
        succeeded,
        "flow phase {seen}\ncontrollers log:\n{}",
        volcano.log("volcano-controllers")
    );
    let made = text(&kubectl(
        &admin,
        &[
            "get",
            "jobtemplate",
            "load",
            "-o",
            "jsonpath={.status.jobDependsOnList}",
        ],
    ));
    assert!(made.contains("etl-load"), "{made}");
    let completed = text(&kubectl(
        &admin,
        &[
            "get",
            "jobflow",
            "etl",
            "-o",
            "jsonpath={.status.completedJobs}",
        ],
    ));
    assert!(
        completed.contains("etl-extract") && completed.contains("etl-load"),
        "{completed}"
    );

    // The webhook refuses what Volcano's refuses, with its words.
    let cyclic = plane.dir().join("cyclic-flow.yaml");
    std::fs::write(
        &cyclic,
        "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata:\n  name: loop\n\
         spec:\n  flows:\n  - name: a\n    dependsOn:\n      targets: [b]\n\
         \x20 - name: b\n    dependsOn:\n      targets: [a]\n",
    )
    .unwrap();
    let refused = kubectl(&admin, &["create", "-f", cyclic.to_str().unwrap()]);
    assert!(!refused.status.success(), "{}", text(&refused));
    assert!(
        text(&refused).contains(
            "admission webhook \"validatejobflow.volcano.sh\" denied the request: jobflow Flow is not DAG: a -> b -> a"
        ),
        "{}",
        text(&refused)
    );
    let bad_queue = plane.dir().join("bad-queue.yaml");
    std::fs::write(
        &bad_queue,
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata:\n  name: lost\n\
         spec:\n  weight: 1\n  parent: nowhere\n",
    )
    .unwrap();
    let (refused, seen) = eventually(10, || {
        let out = kubectl(&admin, &["create", "-f", bad_queue.to_str().unwrap()]);
        (!out.status.success(), text(&out))
    })
    .await;
    assert!(refused, "{seen}");
    assert!(
        seen.contains("admission webhook \"validatequeue.volcano.sh\" denied the request: failed to get parent queue nowhere"),
        "{seen}"
    );

    let refused = kubectl(&admin, &["delete", "queue", "default"]);
    assert!(!refused.status.success());
    assert!(
        text(&refused).contains("`default` queue can not be deleted"),
        "{}",
        text(&refused)
    );
}
