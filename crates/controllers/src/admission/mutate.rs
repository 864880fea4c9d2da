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
/// (= replicas), `dnsPolicy: ClusterFirstWithHostNet` for host-network pods, the job's
/// `minAvailable` (= Σ task minAvailable), and the plugins the framework plugins depend on
/// (svc and ssh where a framework plugin needs them).
///
/// Volcano tests Go zero values, so an explicit `maxRetry: 0` or `minAvailable: 0` is replaced
/// just like a missing one; this keeps that.
pub fn default_job(job: &mut Job) {
    default_plugins(job);
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

/// Plugins that imply `svc`: they hand out `<pod>.<job>` host names, which only the `svc`
/// plugin's headless Service makes resolvable.
const NEED_SVC: &[&str] = &["mpi", "pytorch", "ray", "tensorflow"];

/// Adds the plugins Volcano's webhook adds for the framework plugins, with no arguments, unless
/// the job already names them: `svc` for mpi, pytorch, tensorflow and ray, and `ssh` for mpi,
/// whose `mpirun` reaches the workers over SSH. `hcclrank` implies nothing.
fn default_plugins(job: &mut Job) {
    let plugins = &mut job.spec.plugins;
    if NEED_SVC.iter().any(|p| plugins.contains_key(*p)) {
        plugins.entry("svc".to_string()).or_default();
    }
    if plugins.contains_key("mpi") {
        plugins.entry("ssh".to_string()).or_default();
    }
}
