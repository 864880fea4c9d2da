//! Which queues may be deleted: Volcano's queue webhook refuses to delete `default` and `root`,
//! a queue whose PodGroups hold resources, and a queue with child queues.

use volcano_api::quantity::parse_milli;
use volcano_api::scheduling::Queue;

use super::{AdmissionError, DEFAULT_QUEUE};

/// The queue at the top of every queue tree.
const ROOT_QUEUE: &str = "root";

/// Whether `queue` may be deleted, given the names of the queues whose parent it is.
pub fn check_queue_deletion(queue: &Queue, children: &[String]) -> Result<(), AdmissionError> {
    let name = queue.metadata.name.as_deref().unwrap_or_default();
    if name == DEFAULT_QUEUE || name == ROOT_QUEUE {
        return Err(AdmissionError::new(
            "metadata.name",
            format!(
                "`{name}` queue can not be deleted: the scheduler and Jobs that name no queue \
                 rely on it"
            ),
        ));
    }
    let held: Vec<String> = queue
        .status
        .as_ref()
        .and_then(|s| s.allocated.as_ref())
        .into_iter()
        .flatten()
        // An amount that does not parse is not known to be zero: it is kept.
        .filter(|(_, q)| parse_milli(&q.0).ok().is_none_or(|m| m != 0))
        .map(|(r, q)| format!("{r} {}", q.0))
        .collect();
    if !held.is_empty() {
        return Err(AdmissionError::new(
            "status.allocated",
            format!(
                "queue {name} cannot be deleted because its PodGroups hold {}; wait until \
                 they finish, or close the queue first",
                held.join(", ")
            ),
        ));
    }
    if !children.is_empty() {
        return Err(AdmissionError::new(
            "metadata.name",
            format!(
                "queue {name} can not be deleted because it has {} child queues: {}",
                children.len(),
                children.join(", ")
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use volcano_api::k8s_openapi::apimachinery::pkg::api::resource::Quantity;

    fn queue(name: &str, allocated: &[(&str, &str)]) -> Queue {
        let mut q: Queue = serde_json::from_value(serde_json::json!({
            "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
            "metadata": {"name": name}, "spec": {"weight": 1}
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        let status = q.status.get_or_insert_with(Default::default);
        status.allocated = Some(
            allocated
                .iter()
                .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
                .collect(),
        );
        q
    }

    #[test]
    fn default_and_root_are_never_deleted() {
        for name in ["default", "root"] {
            let e = check_queue_deletion(&queue(name, &[]), &[]).unwrap_err();
            assert!(e.message.contains("can not be deleted"), "{e}");
        }
    }

    #[test]
    fn a_queue_holding_resources_or_parenting_queues_is_kept() {
        let e = check_queue_deletion(&queue("team", &[("cpu", "2"), ("memory", "0")]), &[])
            .unwrap_err();
        assert!(e.message.contains("hold cpu 2"), "{e}");
        assert!(!e.message.contains("memory"), "{e}");
        let e =
            check_queue_deletion(&queue("eng", &[]), &["dev".into(), "ops".into()]).unwrap_err();
        assert!(e.message.contains("2 child queues: dev, ops"), "{e}");
    }

    #[test]
    fn an_idle_leaf_queue_may_go() {
        assert!(
            check_queue_deletion(&queue("team", &[("cpu", "0"), ("memory", "0Gi")]), &[]).is_ok()
        );
        assert!(check_queue_deletion(&queue("team", &[]), &[]).is_ok());
    }
}
