use std::collections::BTreeMap;

use serde_json::json;

use super::*;

fn meta(annotations: &[(&str, &str)]) -> ObjectMeta {
    let map: BTreeMap<String, String> = annotations
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    ObjectMeta {
        annotations: Some(map),
        ..Default::default()
    }
}

fn ending_of(annotations: &[(&str, &str)]) -> Option<Ending> {
    Lifecycle::read(&[&meta(annotations)]).ok()?.ending()
}

fn ends(secs: u64, outcome: Outcome) -> Option<Ending> {
    Some(Ending {
        after: Duration::from_secs(secs),
        outcome,
    })
}

#[test]
fn the_earlier_ending_wins_and_a_tie_fails() {
    use Outcome::{Fail, Succeed};
    assert_eq!(
        ending_of(&[(DURATION, "10m"), (FAIL_AFTER, "5m")]),
        ends(300, Fail)
    );
    assert_eq!(
        ending_of(&[(DURATION, "5m"), (FAIL_AFTER, "10m")]),
        ends(300, Succeed)
    );
    assert_eq!(
        ending_of(&[(DURATION, "5m"), (FAIL_AFTER, "5m")]),
        ends(300, Fail)
    );
    assert_eq!(ending_of(&[(FAIL_AFTER, "1d")]), ends(86_400, Fail));
    assert_eq!(ending_of(&[]), None);
    assert_eq!(Outcome::Succeed.exit_code(), 0);
    assert_eq!(Outcome::Fail.exit_code(), 1);
}

#[test]
fn each_annotation_comes_from_the_pod_else_its_job_else_its_group() {
    let pod = meta(&[]);
    let job = meta(&[(DURATION, "1h")]);
    let group = meta(&[(DURATION, "2h"), (FAIL_AFTER, "30m")]);
    let read = |places: &[&dyn Annotated]| Lifecycle::read(places).ok().and_then(|l| l.ending());
    assert_eq!(read(&[&pod, &job, &group]), ends(1800, Outcome::Fail));
    assert_eq!(read(&[&pod, &job]), ends(3600, Outcome::Succeed));
    let own = meta(&[(FAIL_AFTER, "2h")]);
    assert_eq!(read(&[&own, &job, &group]), ends(3600, Outcome::Succeed));
}

#[test]
fn json_objects_are_read_like_typed_metadata() {
    let pod = json!({"metadata": {"annotations": {DURATION: "1h30m", FAIL_AFTER: "1.5h"}}});
    let lifecycle = Lifecycle::read(&[&pod]);
    assert_eq!(lifecycle.map(|l| l.ending()), Ok(ends(5400, Outcome::Fail)));
    assert_eq!(Lifecycle::read(&[&json!({})]), Ok(Lifecycle::default()));
}

#[test]
fn a_bad_value_is_an_error_naming_the_annotation_and_the_value() {
    let e = Lifecycle::read(&[&meta(&[(DURATION, "1h"), (FAIL_AFTER, "soon")])]);
    let Err(e) = e else { panic!("{e:?} read") };
    assert_eq!(e.annotation, FAIL_AFTER);
    assert_eq!(e.error.text, "soon");
    assert_eq!(
        e.to_string(),
        "annotation sim.volcano-rs.io/fail-after: \"soon\" is not a duration \
         (write e.g. 90s, 15m, 2h, 1h30m, 500ms, 1d)"
    );
}

#[test]
fn read_leniently_a_bad_value_is_reported_and_the_next_place_decides() {
    let pod = meta(&[(DURATION, "10"), (FAIL_AFTER, "1m")]);
    let job = meta(&[(DURATION, "1d")]);
    let mut bad = Vec::new();
    let read = Lifecycle::read_lenient(&[&pod, &job], |e| bad.push(e));
    assert_eq!(read.duration, Some(Duration::from_secs(86_400)));
    assert_eq!(read.fail_after, Some(Duration::from_secs(60)));
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0].annotation, DURATION);
    assert_eq!(bad[0].error.text, "10");
}

#[test]
fn a_command_sleep_ends_the_pod_only_without_annotations() {
    let argv = ["sh", "-c", "sleep 5"];
    let plain = Lifecycle::default().with_command(&argv);
    assert_eq!(plain.ending(), ends(5, Outcome::Succeed));
    let annotated = Lifecycle {
        fail_after: Some(Duration::from_secs(30)),
        ..Default::default()
    }
    .with_command(&argv);
    assert_eq!(annotated.ending(), ends(30, Outcome::Fail));
    assert_eq!(Lifecycle::default().with_command(&["nginx"]).ending(), None);
}
