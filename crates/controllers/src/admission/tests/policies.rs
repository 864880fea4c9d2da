//! Lifecycle policy rules, at job level and task level.

use super::*;

const VALID_EVENTS: &str =
    "[* PodFailed PodEvicted PodPending Unknown TaskCompleted TaskFailed JobUpdated]";
const VALID_ACTIONS: &str = "[AbortJob RestartJob RestartTask RestartPod RestartPartition \
                             TerminateJob CompleteJob ResumeJob]";

fn with_job_policies(policies: Vec<LifecyclePolicy>) -> Job {
    let mut j = good_job();
    j.spec.policies = policies;
    j
}

#[test]
fn good_policies_are_admitted() {
    let mut j = with_job_policies(vec![
        on_event("PodEvicted", "RestartJob"),
        on_exit(137, "RestartTask"),
        LifecyclePolicy {
            events: vec!["TaskCompleted".into(), "TaskFailed".into()],
            event: "TaskCompleted".into(),
            action: "CompleteJob".into(),
            timeout: Some("10m".into()),
            ..LifecyclePolicy::default()
        },
    ]);
    j.spec.tasks[0].policies = vec![on_event("PodEvicted", "RestartPod")];
    assert_eq!(
        validate_job(&j),
        Ok(()),
        "task lists are separate from the job's"
    );
}

#[test]
fn event_and_exit_code_together() {
    let mut p = on_exit(1, "RestartJob");
    p.event = "PodFailed".into();
    assert_only(
        &with_job_policies(vec![p]),
        "spec.policies[0]",
        "must not specify event and exitCode simultaneously",
    );

    let mut p = on_exit(1, "RestartJob");
    p.events = vec!["PodFailed".into()];
    let mut j = good_job();
    j.spec.tasks[1].policies = vec![p];
    assert_only(
        &j,
        "spec.tasks[1].policies[0]",
        "must not specify event and exitCode simultaneously",
    );
}

#[test]
fn neither_event_nor_exit_code() {
    assert_only(
        &with_job_policies(vec![on_event("", "RestartJob")]),
        "spec.policies[0]",
        "either event and exitCode should be specified",
    );
}

#[test]
fn unknown_and_internal_events() {
    for event in ["PodCrashed", "OutOfSync", "PodRunning"] {
        assert_only(
            &with_job_policies(vec![on_event(event, "RestartJob")]),
            "spec.policies[0].event",
            &format!(
                "Invalid value: \"{event}\": invalid policy event, valid events are {VALID_EVENTS}"
            ),
        );
    }
    let mut p = on_event("", "RestartJob");
    p.events = vec!["PodFailed".into(), "Nope".into()];
    assert_only(
        &with_job_policies(vec![p]),
        "spec.policies[0].events[1]",
        &format!("Invalid value: \"Nope\": invalid policy event, valid events are {VALID_EVENTS}"),
    );
}

#[test]
fn unknown_and_internal_actions() {
    for action in ["Reboot", "SyncJob", ""] {
        assert_only(
            &with_job_policies(vec![on_event("PodFailed", action)]),
            "spec.policies[0].action",
            &format!(
                "Invalid value: \"{action}\": invalid policy action, valid actions are {VALID_ACTIONS}"
            ),
        );
    }
    let mut j = good_job();
    j.spec.tasks[0].policies = vec![on_exit(3, "Reboot")];
    assert_only(
        &j,
        "spec.tasks[0].policies[0].action",
        &format!(
            "Invalid value: \"Reboot\": invalid policy action, valid actions are {VALID_ACTIONS}"
        ),
    );
}

#[test]
fn duplicate_events_across_policies() {
    let mut second = on_event("", "AbortJob");
    second.events = vec!["PodPending".into(), "PodFailed".into()];
    assert_only(
        &with_job_policies(vec![on_event("PodFailed", "RestartJob"), second]),
        "spec.policies[1].events[1]",
        "duplicate event PodFailed across different policy",
    );
}

#[test]
fn an_event_named_twice_in_one_policy_is_fine() {
    let mut p = on_event("PodFailed", "RestartJob");
    p.events = vec!["PodFailed".into(), "PodFailed".into()];
    assert_eq!(validate_job(&with_job_policies(vec![p])), Ok(()));
}

#[test]
fn any_event_must_be_alone() {
    assert_only(
        &with_job_policies(vec![
            on_event("*", "RestartJob"),
            on_event("PodFailed", "AbortJob"),
        ]),
        "spec.policies",
        "if there's * here, no other policy should be here",
    );
    // Volcano counts events only: an exit-code policy beside `*` is allowed.
    assert_eq!(
        validate_job(&with_job_policies(vec![
            on_event("*", "RestartJob"),
            on_exit(2, "AbortJob"),
        ])),
        Ok(())
    );
}

#[test]
fn exit_code_zero() {
    let mut j = good_job();
    j.spec.tasks[1].policies = vec![on_exit(0, "RestartJob")];
    assert_only(
        &j,
        "spec.tasks[1].policies[0].exitCode",
        "0 is not a valid error code",
    );
}

#[test]
fn duplicate_exit_codes() {
    assert_only(
        &with_job_policies(vec![on_exit(1, "RestartJob"), on_exit(1, "AbortJob")]),
        "spec.policies[1].exitCode",
        "duplicate exitCode 1",
    );
}

#[test]
fn timeouts_are_go_durations() {
    let mut p = on_event("PodPending", "AbortJob");
    p.timeout = Some("ten minutes".into());
    assert_only(
        &with_job_policies(vec![p]),
        "spec.policies[0].timeout",
        "time: invalid duration \"ten minutes\"",
    );
}

#[test]
fn every_broken_policy_is_reported() {
    let all = violations(validate_job(&with_job_policies(vec![
        on_exit(0, "RestartJob"),
        on_event("Bogus", "RestartJob"),
        on_event("PodFailed", "Bogus"),
    ])));
    let fields: Vec<&str> = all.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        fields,
        [
            "spec.policies[0].exitCode",
            "spec.policies[1].event",
            "spec.policies[2].action"
        ]
    );
}
