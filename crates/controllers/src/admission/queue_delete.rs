//! Which queues may be deleted: Volcano's queue webhook refuses to delete `default` and `root`,
//! a queue with child queues, and (here always, in Volcano behind a flag) a queue whose
//! PodGroups hold resources.

use volcano_api::keys::ROOT_QUEUE;
use volcano_api::quantity::parse_milli;
use volcano_api::scheduling::Queue;

use super::DEFAULT_QUEUE;
use super::queue::children_of;
use super::request::AdmissionView;

/// Whether `queue` may be deleted, in Volcano's words when not.
pub fn check_queue_deletion(queue: &Queue, view: &dyn AdmissionView) -> Result<(), String> {
    let name = queue.metadata.name.as_deref().unwrap_or_default();
    if name == DEFAULT_QUEUE || name == ROOT_QUEUE {
        return Err(format!("`{name}` queue can not be deleted"));
    }
    let allocated = queue.status.as_ref().and_then(|s| s.allocated.as_ref());
    let held: Vec<(String, String, Option<i64>)> = allocated
        .into_iter()
        .flatten()
        // An amount that does not parse is not known to be zero: it is kept.
        .map(|(r, q)| (r.clone(), q.0.clone(), parse_milli(&q.0).ok()))
        .filter(|(_, _, m)| m.is_none_or(|m| m != 0))
        .collect();
    if let Some((_, _, Some(pods))) = held.iter().find(|(r, _, _)| r == "pods") {
        return Err(format!(
            "queue {name} cannot be deleted because it has allocated Pods: {}",
            pods / 1000
        ));
    }
    if !held.is_empty() {
        let listed: Vec<String> = held.iter().map(|(r, q, _)| format!("{r} {q}")).collect();
        return Err(format!(
            "queue {name} cannot be deleted because its PodGroups hold {}; wait until they \
             finish, or close the queue first",
            listed.join(", ")
        ));
    }
    let mut children: Vec<String> = children_of(view, name)
        .into_iter()
        .filter_map(|q| q.metadata.name)
        .collect();
    children.sort();
    if !children.is_empty() {
        return Err(format!(
            "queue {name} can not be deleted because it has {} child queues: {}",
            children.len(),
            children.join(", ")
        ));
    }
    Ok(())
}
