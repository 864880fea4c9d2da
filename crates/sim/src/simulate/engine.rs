//! The run loop: fire what is due, let the controllers settle, run a session when one is due
//! and something changed, sample, and jump to the next instant anything can change.

use volcano_controllers::change::Change;
use volcano_controllers::manager::ManagerOptions;
use volcano_controllers::time::Instant;
use volcano_scheduler::conf::SchedulerConf;

use super::clock::{Clock, Event};
use super::disruptions;
use super::kubelet::Kubelets;
use super::plan::{NodeChange, Plan, Submission};
use super::records::Records;
use super::sampler::Sampler;
use super::stats::stats;
use super::{Progress, SimError, SimOptions, nodes};
use crate::cluster::Cluster;
use crate::metrics::{EvictionRecord, FaultReport, SimMetrics, Summary};
use volcano_api::WatchEvent;

/// One run in progress.
pub struct Engine<'a> {
    cluster: Cluster,
    clock: Clock,
    kubelets: Kubelets,
    submissions: Vec<Option<Submission>>,
    pending_submissions: usize,
    records: Records,
    sampler: Sampler,
    conf: &'a SchedulerConf,
    capacity: bool,
    opts: &'a SimOptions,
    /// Something changed since the last session.
    dirty: bool,
    /// The last session changed something (so the next may do more).
    session_changed: bool,
    /// When the last session ran.
    last_session: Option<Instant>,
    sessions: u64,
    pods_bound: u64,
    evictions: Vec<EvictionRecord>,
    session_ms: Vec<f64>,
}

impl<'a> Engine<'a> {
    /// The cluster of the plan's time zero, its events scheduled.
    pub fn new(
        plan: Plan,
        conf: &'a SchedulerConf,
        opts: &'a SimOptions,
        controllers: ManagerOptions,
    ) -> Self {
        let records = Records::new(&plan, &controllers.scheduler_names);
        let sampler = Sampler::new(&plan, &records, opts.sample_every);
        let mut clock = Clock::new(opts.schedule_period);
        for (i, (t, _)) in plan.submissions.iter().enumerate() {
            clock.schedule(Instant(*t), Event::Submit(i));
        }
        for (t, node, change) in &plan.node_events {
            clock.schedule(Instant(*t), Event::Node(node.clone(), change.clone()));
        }
        let capacity = conf
            .tiers
            .iter()
            .flat_map(|t| &t.plugins)
            .any(|p| p.name == "capacity");
        let Plan {
            initial,
            submissions,
            initially_down,
            ..
        } = plan;
        let mut engine = Engine {
            cluster: Cluster::new(initial, controllers, Instant::default()),
            clock,
            kubelets: Kubelets::new(opts.pod_startup).with_default_duration(opts.default_duration),
            pending_submissions: submissions.len(),
            submissions: submissions.into_iter().map(|(_, s)| Some(s)).collect(),
            records,
            sampler,
            conf,
            capacity,
            opts,
            dirty: true,
            session_changed: false,
            last_session: None,
            sessions: 0,
            pods_bound: 0,
            evictions: Vec::new(),
            session_ms: Vec::new(),
        };
        if opts.check_snapshots {
            engine.cluster.check_snapshots();
        }
        if let Some(plan) = &opts.faults {
            engine.cluster.inject_faults(plan.clone());
            let Cluster { store, chaos, .. } = &mut engine.cluster;
            if let Some(chaos) = chaos.as_deref_mut() {
                disruptions::schedule(&mut chaos.faults, &store.objects().nodes, &mut engine.clock);
            }
        }
        let now = engine.clock.now();
        for name in initially_down {
            engine.kubelets.set_down(&name, true);
            engine.change_node(&name, |n| nodes::mark_down(n, now));
        }
        engine
    }

    /// Runs to the end and returns what was measured.
    pub fn run(mut self, progress: &mut dyn FnMut(&Progress)) -> Result<SimMetrics, SimError> {
        let cap = Instant(match self.opts.until {
            Some(u) => u.min(self.opts.max_time),
            None => self.opts.max_time,
        });
        self.adopt_initial_pods();
        let end = loop {
            let now = self.clock.now();
            let mut out = Vec::new();
            while let Some(event) = self.clock.pop_due() {
                self.fire(event, &mut out);
            }
            self.absorb(out);
            self.settle()?;
            // One session per tick: with no start-up delay a session's pods start at its own
            // instant, and the loop comes back to that instant to start them.
            let fresh_tick = self.last_session != Some(now);
            if self.clock.on_grid() && fresh_tick && (self.dirty || self.session_changed) {
                self.last_session = Some(now);
                self.session()?;
            }
            self.records.check_bare(self.cluster.store.objects(), now);
            self.check_invariants();
            progress(&Progress {
                now: now.0,
                until: self.opts.until.map(|_| cap.0),
                jobs: self.records.count(),
                finished: self.records.count() - self.records.unfinished(),
            });
            let all_done = self.pending_submissions == 0 && self.records.unfinished() == 0;
            if self.opts.until.is_none() && all_done {
                break now;
            }
            let session_due = (self.dirty || self.session_changed).then(|| self.clock.next_tick());
            // Events may be due now still (scheduled by this instant's session); the
            // controllers have done all that was due now.
            let next = [
                self.clock.next_event(),
                self.cluster.controllers.next_due().filter(|t| *t > now),
                session_due,
            ]
            .into_iter()
            .flatten()
            .min();
            match next {
                // Nothing can change any more: stop here, or idle on to `--until`.
                None => break if self.opts.until.is_some() { cap } else { now },
                Some(t) if t > cap => break cap,
                Some(t) => {
                    let objs = self.cluster.store.objects();
                    let (records, kubelets) = (&self.records, &self.kubelets);
                    self.sampler.sample_until(t, false, objs, records, kubelets);
                    self.clock.advance_to(t);
                    self.cluster.now = t;
                }
            }
        };
        Ok(self.finish(end))
    }

    fn adopt_initial_pods(&mut self) {
        let keys: Vec<(String, String)> = self
            .cluster
            .store
            .objects()
            .pods
            .iter()
            .map(|p| {
                self.records.pod_changed(None, Some(p), Instant::default());
                (
                    p.metadata.namespace.clone().unwrap_or_default(),
                    p.metadata.name.clone().unwrap_or_default(),
                )
            })
            .collect();
        let mut out = Vec::new();
        for (ns, name) in keys {
            let store = &mut self.cluster.store;
            self.kubelets
                .adopt(store, &mut self.clock, &ns, &name, &mut out);
        }
        self.absorb(out);
    }

    /// Changes a node as its kubelet or the node lifecycle would; whether it exists.
    fn change_node(
        &mut self,
        name: &str,
        change: impl FnOnce(&mut volcano_api::k8s_openapi::api::core::v1::Node),
    ) -> bool {
        self.cluster
            .store
            .modify(&volcano_api::NamespacedName::cluster(name), change)
            .is_ok()
    }

    fn fire(&mut self, event: Event, out: &mut Vec<WatchEvent>) {
        let now = self.clock.now();
        match event {
            Event::Submit(i) => {
                if let Some(s) = self.submissions.get_mut(i).and_then(Option::take) {
                    self.pending_submissions = self.pending_submissions.saturating_sub(1);
                    self.submit(s, out);
                }
            }
            Event::PodStart(p) => {
                let store = &mut self.cluster.store;
                self.kubelets.start(store, &mut self.clock, &p, out);
            }
            Event::PodEnd(p, outcome) => {
                let store = &mut self.cluster.store;
                self.kubelets.end(store, now, &p, outcome, out);
            }
            Event::Node(name, change) => {
                let exists = self.change_node(&name, |node| match &change {
                    NodeChange::Down => nodes::mark_down(node, now),
                    NodeChange::Up => nodes::mark_up(node, now),
                    NodeChange::Shrink(list) => nodes::shrink(node, list),
                });
                if !exists {
                    return;
                }
                match change {
                    NodeChange::Down => {
                        self.kubelets.set_down(&name, true);
                        let store = &mut self.cluster.store;
                        self.kubelets.lose_pods_on(store, &name, now, out);
                    }
                    NodeChange::Up => self.kubelets.set_down(&name, false),
                    NodeChange::Shrink(_) => {}
                }
                self.sampler.nodes_changed();
                self.dirty = true;
            }
            Event::Fault(d) => {
                let Cluster { store, chaos, .. } = &mut self.cluster;
                if let Some(chaos) = chaos.as_deref_mut() {
                    let (kubelets, clock) = (&mut self.kubelets, &mut self.clock);
                    disruptions::fire(d, store, kubelets, clock, &mut chaos.faults, out);
                }
                self.sampler.nodes_changed();
                self.dirty = true;
            }
        }
    }

    /// With faults: notes what the objects look like now and checks the events recorded
    /// since the last step.
    fn check_invariants(&mut self) {
        let Cluster { store, chaos, .. } = &mut self.cluster;
        if let Some(chaos) = chaos.as_deref_mut() {
            chaos.invariants.observe(store.objects());
            chaos.invariants.events(&store.events);
        }
    }

    fn submit(&mut self, s: Submission, out: &mut Vec<WatchEvent>) {
        let now = self.clock.now();
        let store = &mut self.cluster.store;
        self.dirty = true;
        match s {
            Submission::Job(j) => out.push(store.create_job(*j, now)),
            Submission::Queue(q) => out.extend(store.create_queue(*q, now)),
            Submission::Command(c) => out.push(store.create_command(*c, now)),
            Submission::JobFlow(f) => out.push(store.create_job_flow(*f, now)),
            Submission::JobTemplate(t) => out.push(store.create_job_template(*t, now)),
            Submission::PodGroup(g) => {
                out.extend(
                    store
                        .apply(&Change::CreatePodGroup(g), now)
                        .unwrap_or_default(),
                );
            }
            Submission::Pod(p) => {
                let (ns, name) = (
                    p.metadata.namespace.clone().unwrap_or_default(),
                    p.metadata.name.clone().unwrap_or_default(),
                );
                out.extend(store.apply(&Change::CreatePod(p), now).unwrap_or_default());
                self.kubelets.adopt(store, &mut self.clock, &ns, &name, out);
            }
        }
    }

    /// Hands what the kubelets and submissions changed to the records and the controllers.
    fn absorb(&mut self, out: Vec<WatchEvent>) {
        if out.is_empty() {
            return;
        }
        let now = self.clock.now();
        for w in &out {
            if let WatchEvent::Pod(old, new) = w {
                self.records
                    .pod_changed(old.as_deref(), new.as_deref(), now);
            }
        }
        self.cluster.feed(&out);
        self.sampler.changed();
        self.dirty = true;
    }

    fn settle(&mut self) -> Result<(), SimError> {
        let now = self.clock.now();
        let records = &mut self.records;
        let mut seen_by_scheduler = false;
        let settled = self.cluster.settle_with(|c| {
            records.controller_change(c, now);
            seen_by_scheduler |= scheduler_reads(c);
        })?;
        if settled.changes > 0 {
            self.sampler.changed();
        }
        // A session reads pods, PodGroups, queues, nodes and priority classes, nothing else:
        // a Job's status, an event or a Service cannot change what it decides.
        self.dirty |= seen_by_scheduler;
        Ok(())
    }

    fn session(&mut self) -> Result<(), SimError> {
        let now = self.clock.now();
        self.sessions += 1;
        let wall = std::time::Instant::now();
        let snap = self.cluster.snapshot()?;
        let snapshot_took = wall.elapsed();
        self.sampler.read_deserved(&snap, self.capacity);
        let wall = std::time::Instant::now();
        let uid = format!("session-{}", self.sessions);
        let d = self.cluster.run_session_on(snap, self.conf, &uid);
        let took = snapshot_took + wall.elapsed();
        self.session_ms.push(if self.opts.timings {
            took.as_secs_f64() * 1000.0
        } else {
            0.0
        });
        self.dirty = false;
        // A session whose writes faults cut short left work undone: the next one retries it.
        let cut = self.cluster.chaos().is_some_and(|c| c.last_session_cut);
        self.session_changed = d.changed_anything() || cut;
        if self.session_changed {
            self.sampler.changed();
        }
        for pod in &d.evictions {
            self.evictions.push(EvictionRecord {
                t_s: now.0.as_secs_f64(),
                pod: pod.to_string(),
                reason: d.eviction_reasons.get(pod).cloned().unwrap_or_default(),
            });
            self.records
                .pod_evicted(pod, d.eviction_reasons.get(pod).map_or("", String::as_str));
            self.records.pod_gone(pod);
        }
        self.records.session_reasons(&d, now);
        let mut out = Vec::new();
        for (pod, _) in &d.binds {
            self.pods_bound += 1;
            let store = &mut self.cluster.store;
            self.kubelets
                .adopt(store, &mut self.clock, &pod.namespace, &pod.name, &mut out);
        }
        self.absorb(out);
        self.settle()
    }

    fn finish(mut self, end: Instant) -> SimMetrics {
        let faults = self.cluster.chaos.take().map(|mut chaos| {
            chaos.invariants.end(self.cluster.store.objects());
            FaultReport {
                seed: chaos.faults.plan().seed,
                injected: chaos.faults.counts,
                violations: chaos
                    .invariants
                    .violations()
                    .iter()
                    .map(ToString::to_string)
                    .collect(),
            }
        });
        let objects = self.cluster.store.objects();
        let running = self
            .sampler
            .finish(end, objects, &self.records, &self.kubelets);
        let jobs = std::mem::take(&mut self.records).finish(objects, &running, end);
        let topology = crate::topology::build_report(&crate::topology::TopologyInput {
            objects,
            jobs: &jobs,
            stats,
        });
        let waits: Vec<f64> = jobs.iter().filter_map(|j| j.wait_s).collect();
        let completions: Vec<f64> = jobs.iter().filter_map(|j| j.completion_s).collect();
        let first = jobs
            .iter()
            .map(|j| j.submitted_s)
            .fold(f64::INFINITY, f64::min);
        let last = jobs
            .iter()
            .filter_map(|j| j.finished_s)
            .fold(f64::NAN, f64::max);
        let finished: Vec<_> = jobs.iter().filter(|j| j.finished_s.is_some()).collect();
        let completed = finished
            .iter()
            .filter(|j| j.phase == volcano_api::batch::job_phase::COMPLETED)
            .count() as u64;
        let timeline = std::mem::take(&mut self.sampler.timeline);
        let resources = self.sampler.resources().to_vec();
        let mean_utilisation = resources
            .iter()
            .map(|r| {
                let values: Vec<f64> = timeline
                    .iter()
                    .map(|s| s.utilisation.get(r).copied().unwrap_or(0.0))
                    .collect();
                (r.clone(), stats(&values).mean)
            })
            .collect();
        SimMetrics {
            summary: Summary {
                simulated_s: end.0.as_secs_f64(),
                makespan_s: if last.is_nan() { 0.0 } else { last - first },
                sessions: self.sessions,
                jobs: jobs.len() as u64,
                completed,
                failed: finished.len() as u64 - completed,
                unfinished: (jobs.len() - finished.len()) as u64,
                pods_bound: self.pods_bound,
                evictions: self.evictions.len() as u64,
                wait_s: stats(&waits),
                completion_s: stats(&completions),
                session_ms: stats(&self.session_ms),
                mean_utilisation,
            },
            resources,
            queues: self.sampler.queues().to_vec(),
            jobs,
            timeline,
            evictions: self.evictions,
            session_ms: self.session_ms,
            faults,
            topology,
            // The caller knows the seed and the configuration's text.
            seed: 0,
            scheduler_conf: String::new(),
        }
    }
}

/// Whether a controller's change alters what a scheduling session reads.
fn scheduler_reads(c: &Change) -> bool {
    match c {
        Change::CreatePod(_)
        | Change::PatchPodAnnotations { .. }
        | Change::DeletePod { .. }
        | Change::CreatePodGroup(_)
        | Change::UpdatePodGroupSpec { .. }
        | Change::DeletePodGroup { .. }
        | Change::PatchQueueState { .. }
        | Change::PatchQueueParent { .. }
        | Change::PatchQueueAnnotations { .. }
        // Deleting a Job deletes its pods and PodGroup.
        | Change::DeleteJob { .. }
        // The network domains placement reads.
        | Change::CreateHyperNode(_)
        | Change::UpdateHyperNode(_)
        | Change::DeleteHyperNode { .. } => true,
        Change::UpdateJobStatus { .. }
        | Change::DeleteCommand { .. }
        | Change::Create(_)
        | Change::Update(_)
        | Change::Delete { .. }
        | Change::Event(_)
        | Change::UpdateCronJobStatus { .. }
        | Change::UpdateJobFlowStatus { .. }
        | Change::UpdateJobTemplateStatus { .. }
        | Change::UpdateHyperNodeStatus { .. } => false,
        // A new Job's PodGroup and pods come from the job controller, in later turns.
        Change::CreateJob(_) => false,
    }
}
