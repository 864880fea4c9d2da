//! The mutating webhook (`mutate_job.go`): the defaults Volcano fills into a Job on create.

use volcano_api::batch::Job;

/// Queue of a job that names none.
pub const DEFAULT_QUEUE: &str = "default";
/// Scheduler of a job that names none.
pub const DEFAULT_SCHEDULER: &str = "volcano";
/// `maxRetry` of a job or task that sets none (or 0).
pub const DEFAULT_MAX_RETRY: i32 = 3;

/// Fills in what Volcano's mutating webhook fills in on create: queue, scheduler name,
/// `maxRetry` of the job and of each task, task names `default<i>`, task `minAvailable`
/// (= replicas), `dnsPolicy: ClusterFirstWithHostNet` for host-network pods, and the job's
/// `minAvailable` (= Σ task minAvailable).
///
/// Volcano tests Go zero values, so an explicit `maxRetry: 0` or `minAvailable: 0` is replaced
/// just like a missing one; this keeps that. The default plugins Volcano adds for the
/// mpi/pytorch/tensorflow/ray frameworks are left out: volcano-rs rejects those plugins.
pub fn default_job(job: &mut Job) {
    let spec = &mut job.spec;
    if spec.queue.is_empty() {
        spec.queue = DEFAULT_QUEUE.to_string();
    }
    if spec.scheduler_name.is_empty() {
        spec.scheduler_name = DEFAULT_SCHEDULER.to_string();
    }
    if matches!(spec.max_retry, None | Some(0)) {
        spec.max_retry = Some(DEFAULT_MAX_RETRY);
    }
    for (index, task) in spec.tasks.iter_mut().enumerate() {
        if task.name.is_empty() {
            task.name = format!("default{index}");
        }
        if let Some(pod) = task.template.spec.as_mut() {
            let host_network = pod.host_network.unwrap_or(false);
            if host_network && pod.dns_policy.as_deref().unwrap_or("").is_empty() {
                pod.dns_policy = Some("ClusterFirstWithHostNet".to_string());
            }
        }
        if task.min_available.is_none() {
            task.min_available = Some(task.replicas);
        }
        if matches!(task.max_retry, None | Some(0)) {
            task.max_retry = Some(DEFAULT_MAX_RETRY);
        }
    }
    if matches!(spec.min_available, None | Some(0)) {
        // Summed wide and clamped: replicas are not validated yet, and a sum that wraps (as
        // Go's int32 does) would turn a too-large gang into a negative one.
        let sum: i64 = spec
            .tasks
            .iter()
            .map(|t| i64::from(t.min_available.unwrap_or(t.replicas)))
            .sum();
        let clamped = sum.clamp(i64::from(i32::MIN), i64::from(i32::MAX));
        spec.min_available = Some(i32::try_from(clamped).unwrap_or(i32::MAX));
    }
}
