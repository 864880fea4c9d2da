//! Tests of the queue commands' pure parts: the Queue built from flags, PodGroup counts and
//! the table.

use clap::Parser;
use volcano_api::scheduling::{PodGroupSpec, PodGroupStatus};

use super::*;

/// The queue flags alone, parsed as `volcano queue create` parses them.
#[derive(Parser, Debug)]
struct Create {
    #[command(flatten)]
    args: CreateArgs,
}

#[derive(Parser, Debug)]
struct Operate {
    #[command(flatten)]
    args: OperateArgs,
}

fn create(argv: &[&str]) -> Result<CreateArgs, clap::Error> {
    Create::try_parse_from(std::iter::once("create").chain(argv.iter().copied())).map(|c| c.args)
}

#[test]
fn create_flags_build_the_queue() {
    let args = create(&[
        "-n",
        "research",
        "-w",
        "4",
        "--capability",
        "cpu=8,memory=16Gi",
    ])
    .unwrap();
    let q = queue_from_flags(&args).unwrap();
    let json = serde_json::to_value(&q).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": "research"},
            "spec": {
                "weight": 4, "reclaimable": true, "priority": 0,
                "capability": {"cpu": "8", "memory": "16Gi"}
            },
            "status": {"state": "Open"}
        })
    );
}

#[test]
fn create_defaults_and_options_follow_vcctl() {
    let args = create(&["-n", "q"]).unwrap();
    assert_eq!(
        (args.weight, args.state, args.reclaimable),
        (1, State::Open, true)
    );
    let args = create(&[
        "-n",
        "q",
        "-S",
        "closed",
        "--reclaimable",
        "false",
        "--parent",
        "eng",
    ])
    .unwrap();
    let q = queue_from_flags(&args).unwrap();
    assert_eq!(q.status.unwrap().state, "Closed");
    assert_eq!(
        (q.spec.reclaimable, q.spec.parent.as_str()),
        (Some(false), "eng")
    );
}

#[test]
fn bad_create_flags_are_refused() {
    for argv in [
        &["-w", "1"][..],
        &["-n", "q", "-w", "0"],
        &["-n", "q", "-w", "70000"],
        &["-n", "q", "-S", "Closing"],
        &["-n", "q", "--reclaimable", "maybe"],
    ] {
        let err = create(argv).unwrap_err();
        assert_eq!(err.exit_code(), 2, "{argv:?}");
    }
    let args = create(&["-n", "q", "--capability", "cpu"]).unwrap();
    let err = queue_from_flags(&args).unwrap_err();
    assert!(err.starts_with("--capability: \"cpu\""), "{err}");
}

#[test]
fn operate_lists_the_actions_when_one_is_wrong() {
    let err = Operate::try_parse_from(["operate", "-n", "q", "-a", "drain"]).unwrap_err();
    assert_eq!(err.exit_code(), 2);
    let text = err.to_string();
    assert!(text.contains("open, close, update"), "{text}");
    let ok = Operate::try_parse_from(["operate", "-n", "q", "-a", "update", "-w", "3"]).unwrap();
    assert_eq!((ok.args.action, ok.args.weight), (Action::Update, Some(3)));
    assert_eq!(weight_patch(3), serde_json::json!({"spec": {"weight": 3}}));
}

fn pg(queue: &str, phase: &str) -> PodGroup {
    let mut pg = PodGroup::new(
        "pg",
        PodGroupSpec {
            queue: queue.into(),
            ..PodGroupSpec::default()
        },
    );
    pg.status = Some(PodGroupStatus {
        phase: phase.into(),
        ..PodGroupStatus::default()
    });
    pg
}

fn queue(name: &str, weight: i32, state: &str, parent: &str) -> Queue {
    let mut q = Queue::new(
        name,
        QueueSpec {
            weight,
            parent: parent.into(),
            ..QueueSpec::default()
        },
    );
    q.status = Some(QueueStatus {
        state: state.into(),
        ..QueueStatus::default()
    });
    q
}

#[test]
fn pod_groups_are_counted_per_queue_and_phase() {
    let pgs = [
        pg("q1", "Running"),
        pg("q1", "Running"),
        pg("q1", "Inqueue"),
        pg("q1", ""),
        pg("", "Completed"),
        pg("q2", "Unknown"),
        pg("q2", "Pending"),
    ];
    let counts = count_pod_groups(&pgs);
    assert_eq!(
        counts["q1"],
        PodGroupCounts {
            inqueue: 1,
            pending: 1,
            running: 2,
            unknown: 0,
            completed: 0
        }
    );
    assert_eq!(counts["default"].completed, 1);
    assert_eq!((counts["q2"].unknown, counts["q2"].pending), (1, 1));
}

#[test]
fn the_queue_table_has_vcctls_columns() {
    let queues = [
        queue("q1", 4, "Closing", "eng"),
        queue("default", 1, "Open", ""),
        queue("root", 1, "", ""),
    ];
    let counts = count_pod_groups(&[pg("q1", "Running"), pg("", "Inqueue")]);
    let text = render_queues(&queues, &counts);
    let want = "\
Name                     Weight  State   Parent  Inqueue Pending Running Unknown Completed
default                  1       Open    root    1       0       0       0       0
q1                       4       Closing eng     0       0       1       0       0
root                     1       Open    -       0       0       0       0       0
";
    assert_eq!(text, want, "got:\n{text}");
}
