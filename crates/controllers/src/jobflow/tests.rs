//! The JobFlow controller driven under virtual time: Jobs are made, run and finish as the
//! harness says, and the flow is synced after every change, as its watch would trigger it.

use std::collections::BTreeMap;
use std::time::Duration;

use volcano_api::batch::{Job, JobSpec, JobState, JobStatus, TaskSpec, job_phase};
use volcano_api::flow::{
    DependsOn, Flow, JobFlow, JobFlowSpec, JobTemplate, JobTemplateSpec, flow_phase, labels,
    retain_policy,
};
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::{JobFlowError, sync_job_flow, sync_job_template};
use crate::time::Instant;

fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: Some("ns".to_string()),
        uid: Some(format!("uid-{name}")),
        ..ObjectMeta::default()
    }
}

fn template(name: &str) -> JobTemplate {
    let spec = JobSpec {
        queue: "default".to_string(),
        tasks: vec![TaskSpec {
            name: format!("{name}-task"),
            replicas: 2,
            ..TaskSpec::default()
        }],
        ..JobSpec::default()
    };
    let mut t = JobTemplate::new(name, JobTemplateSpec(spec));
    t.metadata = meta(name);
    t
}

/// Flows `(name, targets)`.
fn job_flow(flows: &[(&str, &[&str])], policy: &str) -> JobFlow {
    let flows = flows
        .iter()
        .map(|(name, targets)| Flow {
            name: name.to_string(),
            depends_on: (!targets.is_empty()).then(|| DependsOn {
                targets: targets.iter().map(|t| t.to_string()).collect(),
                probe: None,
            }),
            patch: None,
        })
        .collect();
    let mut f = JobFlow::new(
        "flow",
        JobFlowSpec {
            flows,
            job_retain_policy: policy.to_string(),
        },
    );
    f.metadata = meta("flow");
    f
}

/// A cluster of one flow: its Jobs go Pending -> Running after a second, then to their
/// outcome after `runs` (Completed unless listed in `fails`).
struct Harness {
    flow: JobFlow,
    templates: Vec<JobTemplate>,
    jobs: Vec<Job>,
    now: Instant,
    runs: Duration,
    fails: Vec<String>,
    /// `(job, time created)`, in creation order.
    created: Vec<(String, Instant)>,
    errors: Vec<JobFlowError>,
}

impl Harness {
    fn new(flow: JobFlow, templates: Vec<JobTemplate>) -> Self {
        Harness {
            flow,
            templates,
            jobs: Vec::new(),
            now: Instant(Duration::from_secs(1_000)),
            runs: Duration::from_secs(10),
            fails: Vec::new(),
            created: Vec::new(),
            errors: Vec::new(),
        }
    }

    /// Syncs the flow until it asks for nothing new.
    fn sync(&mut self) {
        for _ in 0..10 {
            let out = sync_job_flow(&self.flow, &self.templates, &self.jobs, self.now);
            let mut changed = false;
            for mut job in out.create_jobs {
                job.metadata.creation_timestamp = Some(self.now.to_time());
                job.status = Some(phase(job_phase::PENDING));
                self.created
                    .push((job.metadata.name.clone().unwrap_or_default(), self.now));
                self.jobs.push(job);
                changed = true;
            }
            if !out.delete_jobs.is_empty() {
                self.jobs.retain(|j| {
                    !out.delete_jobs
                        .iter()
                        .any(|k| j.metadata.name.as_deref() == Some(k.name.as_str()))
                });
                changed = true;
            }
            if let Some(status) = out.status
                && self.flow.status.as_ref() != Some(&status)
            {
                self.flow.status = Some(status);
                changed = true;
            }
            if let Some(e) = out.error {
                self.errors.push(e);
            }
            for t in &mut self.templates {
                if let Some(s) = sync_job_template(t, &self.jobs) {
                    t.status = Some(s);
                }
            }
            if !changed {
                return;
            }
        }
        panic!("the flow never settles");
    }

    /// Advances the clock a second at a time for `secs`, moving Jobs and syncing after each.
    fn run_for(&mut self, secs: u64) {
        for _ in 0..secs {
            self.now = self.now.after(Duration::from_secs(1));
            for job in &mut self.jobs {
                let created = job
                    .metadata
                    .creation_timestamp
                    .as_ref()
                    .map(Instant::from_time)
                    .unwrap_or_default();
                let age = self.now.since(created);
                let current = job.status.as_ref().map(|s| s.state.phase.clone());
                let name = job.metadata.name.clone().unwrap_or_default();
                let next = if age >= self.runs + Duration::from_secs(1) {
                    if self.fails.contains(&name) {
                        job_phase::FAILED
                    } else {
                        job_phase::COMPLETED
                    }
                } else if age >= Duration::from_secs(1) {
                    job_phase::RUNNING
                } else {
                    job_phase::PENDING
                };
                if current.as_deref() != Some(next) {
                    job.status = Some(phase(next));
                }
            }
            self.sync();
        }
    }

    fn phase(&self) -> String {
        self.flow
            .status
            .as_ref()
            .map(|s| s.state.phase.clone())
            .unwrap_or_default()
    }

    fn job_names(&self) -> Vec<String> {
        self.jobs
            .iter()
            .filter_map(|j| j.metadata.name.clone())
            .collect()
    }
}

fn phase(p: &str) -> JobStatus {
    JobStatus {
        state: JobState {
            phase: p.to_string(),
            ..JobState::default()
        },
        ..JobStatus::default()
    }
}

fn chain(policy: &str) -> Harness {
    Harness::new(
        job_flow(&[("a", &[]), ("b", &["a"]), ("c", &["b"])], policy),
        vec![template("a"), template("b"), template("c")],
    )
}

#[test]
fn a_chain_of_three_templates_runs_in_dependency_order() {
    let mut h = chain(retain_policy::RETAIN);
    h.sync();
    assert_eq!(
        h.job_names(),
        ["flow-a"],
        "only the flow without targets starts"
    );
    assert_eq!(h.phase(), flow_phase::PENDING);
    h.run_for(5);
    assert_eq!(h.phase(), flow_phase::RUNNING);
    assert_eq!(h.job_names(), ["flow-a"], "b waits while a runs");
    h.run_for(60);
    let order: Vec<&str> = h.created.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(order, ["flow-a", "flow-b", "flow-c"]);
    // Each Job starts when the one before it completes: 11 s (1 s pending + 10 s running).
    let start = h.created[0].1;
    let offsets: Vec<u64> = h
        .created
        .iter()
        .map(|(_, t)| t.since(start).as_secs())
        .collect();
    assert_eq!(offsets, [0, 11, 22]);
    assert_eq!(h.phase(), flow_phase::SUCCEED);
    let status = h.flow.status.clone().unwrap_or_default();
    assert_eq!(status.completed_jobs, ["flow-a", "flow-b", "flow-c"]);
    assert_eq!(status.job_status_list.len(), 3);
    let states: Vec<&str> = status.job_status_list[0]
        .running_histories
        .iter()
        .map(|r| r.state.as_str())
        .collect();
    assert_eq!(states, ["Pending", "Running", "Completed"]);
    assert_eq!(h.job_names().len(), 3, "retain keeps the Jobs");
    assert!(h.errors.is_empty(), "{:?}", h.errors);
}

#[test]
fn a_flow_job_carries_its_template_spec_labels_and_owner() {
    let mut h = chain(retain_policy::RETAIN);
    h.sync();
    let job = &h.jobs[0];
    assert_eq!(job.spec.tasks[0].name, "a-task");
    let marks = job.metadata.labels.clone().unwrap_or_default();
    assert_eq!(marks[labels::CREATED_BY_JOB_TEMPLATE], "ns.a");
    assert_eq!(marks[labels::CREATED_BY_JOB_FLOW], "ns.flow");
    assert_eq!(job.metadata.annotations.clone().unwrap_or_default(), marks);
    let owner = &job.metadata.owner_references.clone().unwrap_or_default()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()),
        ("JobFlow", "flow", "uid-flow")
    );
    assert_eq!(owner.api_version, "flow.volcano.sh/v1alpha1");
    assert_eq!(owner.controller, Some(true));
}

#[test]
fn a_failed_dependency_fails_the_flow_and_nothing_after_it_starts() {
    let mut h = chain(retain_policy::RETAIN);
    h.fails.push("flow-a".to_string());
    h.sync();
    h.run_for(60);
    assert_eq!(h.phase(), flow_phase::FAILED);
    assert_eq!(h.job_names(), ["flow-a"]);
    let status = h.flow.status.clone().unwrap_or_default();
    assert_eq!(status.failed_jobs, ["flow-a"]);
}

#[test]
fn a_flow_with_two_targets_waits_for_both() {
    let mut h = Harness::new(
        job_flow(&[("a", &[]), ("b", &[]), ("c", &["a", "b"])], ""),
        vec![template("a"), template("b"), template("c")],
    );
    h.sync();
    h.run_for(3);
    // b finishes late: its Job is made to look younger.
    if let Some(b) = h
        .jobs
        .iter_mut()
        .find(|j| j.metadata.name.as_deref() == Some("flow-b"))
    {
        b.metadata.creation_timestamp = Some(h.now.after(Duration::from_secs(20)).to_time());
    }
    h.run_for(15);
    assert!(
        !h.job_names().contains(&"flow-c".to_string()),
        "c waits for b"
    );
    h.run_for(40);
    assert!(h.job_names().contains(&"flow-c".to_string()));
}

#[test]
fn the_delete_retain_policy_removes_the_jobs_once_the_flow_succeeds() {
    let mut h = chain(retain_policy::DELETE);
    h.sync();
    h.run_for(60);
    assert_eq!(h.phase(), flow_phase::SUCCEED);
    assert!(h.jobs.is_empty(), "left: {:?}", h.job_names());
    assert_eq!(
        h.created.len(),
        3,
        "no Job is made again after the deletion"
    );
}

#[test]
fn a_missing_template_is_an_error_naming_the_flow_and_field() {
    let mut h = Harness::new(
        job_flow(&[("a", &[]), ("ghost", &[])], ""),
        vec![template("a")],
    );
    h.sync();
    assert_eq!(h.job_names(), ["flow-a"], "the flows before it still start");
    let message = h.errors.first().map(|e| e.to_string()).unwrap_or_default();
    assert_eq!(
        message,
        "JobFlow ns/flow: spec.flows[1].name \"ghost\": no JobTemplate \"ghost\" in namespace \"ns\""
    );
}

#[test]
fn a_job_template_lists_the_jobs_made_from_it() {
    let mut h = chain(retain_policy::RETAIN);
    h.sync();
    h.run_for(15);
    let lists: BTreeMap<String, Vec<String>> = h
        .templates
        .iter()
        .map(|t| {
            (
                t.metadata.name.clone().unwrap_or_default(),
                t.status.clone().unwrap_or_default().job_depends_on_list,
            )
        })
        .collect();
    assert_eq!(lists["a"], ["flow-a"]);
    assert_eq!(lists["b"], ["flow-b"]);
    assert!(lists["c"].is_empty(), "no Job made from c yet");
}

mod controller {
    use volcano_api::ObjectStore;
    use volcano_api::event::EventType;

    use super::{job_flow, template};
    use crate::change::Change;
    use crate::jobflow::JobFlowController;
    use crate::time::Instant;
    use crate::view::ClusterView;
    use crate::workqueue::RetryPolicy;

    fn turn(c: &mut JobFlowController, store: &ObjectStore) -> Vec<Change> {
        let view = ClusterView::new(store);
        let Some(w) = c.next(&view, Instant::default()) else {
            return Vec::new();
        };
        c.finish(&w.key, true, Instant::default());
        w.changes
    }

    fn warnings(changes: &[Change]) -> Vec<String> {
        changes
            .iter()
            .filter_map(|c| match c {
                Change::Event(e) if e.type_ == EventType::Warning => Some(e.message.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_missing_template_is_reported_once_and_the_flow_goes_on_when_it_appears() {
        let mut store = ObjectStore::default();
        store.upsert(job_flow(&[("a", &[]), ("b", &["a"])], "retain"));
        let mut c = JobFlowController::new(RetryPolicy::default());
        let flow = job_flow(&[("a", &[]), ("b", &["a"])], "retain");
        c.on_job_flow(None, Some(&flow));
        let first = turn(&mut c, &store);
        let said = warnings(&first);
        assert_eq!(said.len(), 1, "{first:?}");
        assert!(
            said[0].contains("spec.flows[0].name \"a\": no JobTemplate \"a\""),
            "{}",
            said[0]
        );
        // Synced again (say a Job of the namespace changed): the same error is not repeated.
        c.on_job_flow(None, Some(&flow));
        assert!(warnings(&turn(&mut c, &store)).is_empty());

        // The template appears: the flow is looked at again and makes its first Job.
        let a = template("a");
        store.upsert(a.clone());
        c.on_job_template(Some(&a), &ClusterView::new(&store));
        let mut made = Vec::new();
        for _ in 0..3 {
            for ch in turn(&mut c, &store) {
                if let Change::CreateJob(j) = ch {
                    made.push(j.metadata.name.clone().unwrap_or_default());
                }
            }
        }
        assert_eq!(made, ["flow-a"]);
    }

    #[test]
    fn a_flow_with_a_cycle_makes_no_job_and_says_why_once() {
        let mut store = ObjectStore::default();
        let flow = job_flow(&[("a", &["b"]), ("b", &["a"])], "retain");
        store.upsert(flow.clone());
        store.upsert(template("a"));
        store.upsert(template("b"));
        let mut c = JobFlowController::new(RetryPolicy::default());
        c.on_job_flow(None, Some(&flow));
        let first = turn(&mut c, &store);
        assert!(
            !first.iter().any(|ch| matches!(ch, Change::CreateJob(_))),
            "{first:?}"
        );
        assert_eq!(
            warnings(&first),
            ["jobflow Flow is not DAG: a -> b -> a"],
            "{first:?}"
        );
        c.on_job_flow(None, Some(&flow));
        assert!(turn(&mut c, &store).is_empty());
        // Deleted and made again with the same mistake: it is told again.
        c.on_job_flow(Some(&flow), None);
        c.on_job_flow(None, Some(&flow));
        assert_eq!(warnings(&turn(&mut c, &store)).len(), 1);
    }
}
