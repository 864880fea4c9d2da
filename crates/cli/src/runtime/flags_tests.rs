//! The components' command lines parsed as `volcano` parses them: Volcano's chart's, Go's flag
//! spellings, and what each flag then means.

use clap::Parser;

use crate::{Cli, Command};

use super::{ControllerManagerArgs, SchedulerArgs, WebhookManagerArgs};

/// What Volcano's chart (`installer/helm/chart/volcano/templates/admission.yaml`) passes the
/// webhook-manager with the chart's default values (release `volcano` in `volcano-system`).
/// `2>&1` is passed too: a container's args are not run by a shell.
const CHART_WEBHOOK_ARGS: &[&str] = &[
    "--enabled-admission=/jobs/mutate,/jobs/validate,/podgroups/validate,/queues/mutate,/queues/validate,/hypernodes/validate,/cronjobs/validate",
    "--tls-cert-file=/admission.local.config/certificates/tls.crt",
    "--tls-private-key-file=/admission.local.config/certificates/tls.key",
    "--ca-cert-file=/admission.local.config/certificates/ca.crt",
    "--admission-conf=/admission.local.config/configmap/volcano-admission.conf",
    "--webhook-namespace=volcano-system",
    "--webhook-service-name=volcano-admission-service",
    "--enable-healthz=true",
    "--logtostderr",
    "--port=8443",
    "-v=4",
    "2>&1",
];

fn parse(args: &[&str]) -> Result<Command, clap::Error> {
    let argv = std::iter::once("volcano").chain(args.iter().copied());
    Cli::try_parse_from(argv).map(|cli| cli.command)
}

fn scheduler(args: &[&str]) -> SchedulerArgs {
    let mut argv = vec!["scheduler"];
    argv.extend_from_slice(args);
    match parse(&argv) {
        Ok(Command::Scheduler(a)) => *a,
        Ok(_) => panic!("not the scheduler"),
        Err(e) => panic!("{argv:?}: {e}"),
    }
}

fn controllers(args: &[&str]) -> ControllerManagerArgs {
    let mut argv = vec!["controller-manager"];
    argv.extend_from_slice(args);
    match parse(&argv) {
        Ok(Command::ControllerManager(a)) => *a,
        Ok(_) => panic!("not the controller-manager"),
        Err(e) => panic!("{argv:?}: {e}"),
    }
}

fn webhook(args: &[&str]) -> WebhookManagerArgs {
    let mut argv = vec!["webhook-manager"];
    argv.extend_from_slice(args);
    match parse(&argv) {
        Ok(Command::WebhookManager(a)) => *a,
        Ok(_) => panic!("not the webhook-manager"),
        Err(e) => panic!("{argv:?}: {e}"),
    }
}

#[test]
fn the_charts_webhook_manager_command_line_parses() {
    let a = webhook(CHART_WEBHOOK_ARGS);
    assert_eq!(a.port, 8443);
    assert!(a.enable_healthz);
    assert_eq!(a.webhook_namespace.as_deref(), Some("volcano-system"));
    assert_eq!(a.shared.v, Some(4));
    assert_eq!(a.shared.not_flags, ["2>&1"]);
    assert_eq!(a.ignored_flags(), ["--logtostderr", "--admission-conf"]);
    // What a user sets through the chart's values.
    let a = webhook(&[
        "--scheduler-name=my-scheduler",
        "--feature-gates=Foo=true,Bar=false",
        "--kube-api-qps=50",
        "--kube-api-burst=100",
        "--master=https://10.0.0.1:6443",
        "--enable-queue-allocated-pods-check",
        "--enable-root-queue-protection=false",
    ]);
    assert_eq!(a.scheduler_names, ["my-scheduler"]);
    assert!(a.enable_queue_allocated_pods_check && !a.enable_root_queue_protection);
    assert_eq!(a.shared.master.as_deref(), Some("https://10.0.0.1:6443"));
}

#[test]
fn verbosity_takes_every_go_spelling() {
    for argv in [
        &["-v=5"][..],
        &["--v=5"],
        &["-v", "5"],
        &["--v", "5"],
        &["-v5"],
    ] {
        let a = scheduler(argv);
        assert_eq!(a.common.shared.v, Some(5), "{argv:?}");
        assert_eq!(a.common.shared.log_level(), tracing::Level::TRACE);
    }
    assert_eq!(
        scheduler(&["-v=3"]).common.shared.log_level(),
        tracing::Level::DEBUG
    );
    assert_eq!(
        scheduler(&["-v=2"]).common.shared.log_level(),
        tracing::Level::INFO
    );
    assert_eq!(
        scheduler(&[]).common.shared.log_level(),
        tracing::Level::INFO
    );
}

#[test]
fn booleans_are_go_booleans() {
    let a = controllers(&["--logtostderr"]);
    assert_eq!(a.common.shared.klog.logtostderr, Some(true));
    let a = controllers(&["--logtostderr=false"]);
    assert_eq!(a.common.shared.klog.logtostderr, Some(false));
    assert_eq!(a.ignored_flags(), ["--logtostderr"]);
    assert!(controllers(&["--leader-elect"]).common.leader_elect);
    assert!(!controllers(&["--leader-elect=false"]).common.leader_elect);
    assert!(!controllers(&["--leader-elect=0"]).common.leader_elect);
    assert!(controllers(&[]).common.leader_elect);
    assert!(
        controllers(&["--enable-healthz=True"])
            .common
            .enable_healthz
    );
    // As pflag: a boolean takes no separate value, so what follows is an argument.
    let a = controllers(&["--enable-healthz", "false"]);
    assert!(a.common.enable_healthz);
    assert_eq!(a.common.shared.not_flags, ["false"]);
}

#[test]
fn the_lease_namespace_has_both_names() {
    let a = scheduler(&["--leader-elect-resource-namespace=x"]);
    assert_eq!(a.common.lease_namespace(), "x");
    let a = scheduler(&["--lock-object-namespace", "old"]);
    assert_eq!(a.common.lease_namespace(), "old");
    // Volcano lets the deprecated flag win.
    let a = scheduler(&[
        "--leader-elect-resource-namespace=x",
        "--lock-object-namespace=old",
    ]);
    assert_eq!(a.common.lease_namespace(), "old");
    assert_eq!(scheduler(&[]).common.lease_namespace(), "volcano-system");
    let a = controllers(&["--leader-elect-resource-name=vc-controller-manager"]);
    assert_eq!(
        a.common.leader_elect_resource_name.as_deref(),
        Some("vc-controller-manager")
    );
}

#[test]
fn addresses_default_to_volcanos() {
    let s = scheduler(&[]);
    assert_eq!(s.listen_address.addr, Some("0.0.0.0:8080".parse().unwrap()));
    assert_eq!(
        s.common.healthz_address.addr,
        Some("0.0.0.0:11251".parse().unwrap())
    );
    assert!(s.common.healthz_serving(&s.listen_address).is_none());
    let c = controllers(&["--enable-healthz=true"]);
    assert_eq!(c.listen_address.addr, Some("0.0.0.0:8081".parse().unwrap()));
    assert!(c.common.healthz_serving(&c.listen_address).is_some());
    // The same address is served once.
    let c = controllers(&[
        "--enable-healthz",
        "--healthz-address=127.0.0.1:9000",
        "--listen-address=127.0.0.1:9000",
    ]);
    assert!(c.common.healthz_serving(&c.listen_address).is_none());
    // Port 0 twice is two free ports.
    let c = controllers(&[
        "--enable-healthz",
        "--healthz-address=127.0.0.1:0",
        "--listen-address=127.0.0.1:0",
    ]);
    assert!(c.common.healthz_serving(&c.listen_address).is_some());
    assert_eq!(
        scheduler(&["--listen-address", "127.0.0.1:0"])
            .listen_address
            .addr
            .map(|a| a.port()),
        Some(0)
    );
    assert_eq!(scheduler(&["--listen-address="]).listen_address.addr, None);
}

#[test]
fn scheduler_tuning_means_what_volcano_means() {
    assert_eq!(scheduler(&[]).percentage(), None);
    assert_eq!(
        scheduler(&["--percentage-nodes-to-find=0"]).percentage(),
        None
    );
    assert_eq!(
        scheduler(&["--percentage-nodes-to-find=-1"]).percentage(),
        None
    );
    assert_eq!(
        scheduler(&["--percentage-nodes-to-find=30"]).percentage(),
        Some(30)
    );
    assert_eq!(
        scheduler(&["--percentage-nodes-to-find", "250"]).percentage(),
        Some(100)
    );
    // At the values built in, the minimums are honoured; other values are named as ignored.
    let a = scheduler(&[
        "--minimum-feasible-nodes=100",
        "--minimum-percentage-nodes-to-find=5",
    ]);
    assert!(a.ignored_flags().is_empty(), "{:?}", a.ignored_flags());
    let a = scheduler(&[
        "--minimum-feasible-nodes=50",
        "--node-selector=volcano.sh/role:train",
        "--node-selector=volcano.sh/role:serving",
    ]);
    assert_eq!(
        a.ignored_flags(),
        ["--minimum-feasible-nodes", "--node-selector"]
    );
    assert_eq!(a.volcano.node_selector.len(), 2);
}

#[test]
fn controller_flags_mean_what_volcano_means() {
    assert_eq!(controllers(&[]).max_retries(), 15);
    assert_eq!(controllers(&["--max-requeue-num=3"]).max_retries(), 3);
    assert_eq!(controllers(&["--max-requeue-num", "-1"]).max_retries(), 0);
    let a = controllers(&["--controllers=*,-sharding-controller,-hyperNode-controller"]);
    assert_eq!(
        a.controllers,
        ["*", "-sharding-controller", "-hyperNode-controller"]
    );
    assert!(a.check_controllers().is_ok());
    let a = controllers(&["--controllers", "-job-controller,+job-controller"]);
    assert!(a.check_controllers().is_err());
}

#[test]
fn the_controller_list_reads_as_volcanos() {
    use super::controller_enabled;
    let list = |s: &str| -> Vec<String> { s.split(',').map(str::to_string).collect() };
    assert!(controller_enabled(
        &list("*,-sharding-controller"),
        "job-controller"
    ));
    assert!(!controller_enabled(
        &list("*,-job-controller"),
        "job-controller"
    ));
    assert!(controller_enabled(
        &list("+job-controller"),
        "job-controller"
    ));
    assert!(!controller_enabled(
        &list("+job-controller"),
        "queue-controller"
    ));
    assert!(controller_enabled(
        &list("queue-controller"),
        "queue-controller"
    ));
}

#[test]
fn an_unknown_flag_is_still_refused_by_name() {
    for component in ["scheduler", "controller-manager", "webhook-manager"] {
        let Err(e) = parse(&[component, "--no-such-flag=1"]) else {
            panic!("{component} accepted --no-such-flag");
        };
        assert_eq!(e.kind(), clap::error::ErrorKind::UnknownArgument);
        assert!(e.to_string().contains("--no-such-flag"), "{e}");
    }
    let Err(e) = parse(&["scheduler", "--leader-elect=maybe"]) else {
        panic!("--leader-elect=maybe accepted");
    };
    assert!(e.to_string().contains("maybe"), "{e}");
}

#[test]
fn a_flag_given_twice_takes_its_last_value() {
    assert_eq!(webhook(&["--port=8443", "--port=9443"]).port, 9443);
    assert!(
        !scheduler(&["--leader-elect", "--leader-elect=false"])
            .common
            .leader_elect
    );
    // Lists still add up.
    let a = controllers(&["--scheduler-name=a", "--scheduler-name=b"]);
    assert_eq!(a.common.scheduler_names, ["a", "b"]);
}

#[test]
fn version_is_a_flag_of_each_component() {
    assert!(scheduler(&["--version"]).common.shared.print_version());
    assert!(
        controllers(&["--version=true"])
            .common
            .shared
            .print_version()
    );
    assert!(!webhook(&["--version=false"]).shared.print_version());
}
