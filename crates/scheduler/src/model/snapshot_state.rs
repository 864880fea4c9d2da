//! What a session reads from a snapshot, as text that does not depend on ids or order: how
//! the incremental cache is checked against a snapshot built from all objects.

use std::fmt::Write;

use super::Snapshot;

impl Snapshot {
    /// The scheduling state (tasks and where they stand, jobs with their counts and
    /// allocation, node accounting, queues), one sorted line per object, leaving out resource
    /// dimensions that are zero everywhere. Two snapshots a session would treat alike give
    /// the same text.
    pub fn scheduling_state(&self) -> String {
        let s = self;
        let d = |r| s.dims.describe(r);
        // A dimension left over from a deleted object is unbounded in every capability.
        let bounded = |r: &crate::resource::Resource| {
            (0..s.dims.len())
                .filter(|&i| r.get(i) != crate::resource::UNBOUNDED && r.get(i) != 0)
                .map(|i| format!("{} {}", s.dims.name(i), r.get(i)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut out = String::new();
        let mut tasks: Vec<String> = s
            .tasks
            .iter()
            .map(|t| {
                format!(
                    "task {} {:?} node={:?} job={:?} req={} prio={}",
                    t.key,
                    t.status,
                    t.node.map(|n| s.node(n).name.clone()),
                    t.job.map(|j| s.job(j).key.clone()),
                    d(&t.resreq),
                    t.priority
                )
            })
            .collect();
        tasks.sort();
        let mut jobs: Vec<String> = s
            .jobs
            .iter()
            .map(|j| {
                let mut members: Vec<String> = j.tasks.iter().map(|&t| s.task(t).key.to_string()).collect();
                members.sort();
                format!(
                    "job {} queue={} min={} {:?} counts={:?} be={} alloc={} phase={:?} shadow={} tasks={members:?}",
                    j.key,
                    s.queue(j.queue).name,
                    j.min_available,
                    j.priority,
                    j.counts,
                    j.pending_best_effort,
                    d(&j.allocated),
                    j.phase,
                    j.shadow
                )
            })
            .collect();
        jobs.sort();
        let mut nodes: Vec<String> = s
            .nodes
            .iter()
            .map(|n| {
                let mut on: Vec<String> = n.tasks.iter().map(|&t| s.task(t).key.to_string()).collect();
                on.sort();
                let labels = n.node.metadata.labels.clone().unwrap_or_default();
                format!(
                    "node {} alloc={} idle={} used={} rel={} fut={} nz={:?} oos={} labels={labels:?} tasks={on:?}",
                    n.name,
                    d(&n.allocatable),
                    d(&n.idle),
                    d(&n.used),
                    d(&n.releasing),
                    d(&n.future_idle),
                    n.non_zero_requested,
                    n.out_of_sync
                )
            })
            .collect();
        nodes.sort();
        let mut queues: Vec<String> = s
            .queues
            .iter()
            .map(|q| {
                format!(
                    "queue {} w={} cap={} alloc={} {:?}",
                    q.name,
                    q.weight,
                    bounded(&q.capability),
                    d(&q.old_allocated),
                    q.state
                )
            })
            .collect();
        queues.sort();
        for line in tasks.iter().chain(&jobs).chain(&nodes).chain(&queues) {
            let _ = writeln!(out, "{line}");
        }
        let _ = writeln!(out, "total={}", d(&s.total_resource));
        out
    }
}
