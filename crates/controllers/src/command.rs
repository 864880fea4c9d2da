//! Commands: each is consumed at most once. It is deleted first; only once the delete has
//! succeeded is its action handed to the controller of its target, so a Command seen twice
//! (a relist, a second controller) is never carried out twice.

use volcano_api::bus::{BusAction, Command};
use volcano_api::event::{Event, EventType};

use crate::change::Change;
use volcano_api::{NamespacedName, ObjectKind, ObjectRef};

/// Where a consumed Command's action goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// To the job controller, for the job `(namespace, name)`.
    Job(NamespacedName, BusAction),
    /// To the queue controller, for the named queue.
    Queue(String, BusAction),
}

/// What to do with a Command: delete it, then (if it is valid) route its action.
#[derive(Debug, Clone)]
pub struct Consumption {
    /// The Command.
    pub command: NamespacedName,
    /// The delete (and a warning event for a Command that cannot be carried out).
    pub changes: Vec<Change>,
    /// Where the action goes once the delete succeeded.
    pub route: Option<Route>,
}

const JOB_ACTIONS: &[BusAction] = &[
    BusAction::AbortJob,
    BusAction::RestartJob,
    BusAction::RestartTask,
    BusAction::RestartPod,
    BusAction::TerminateJob,
    BusAction::CompleteJob,
    BusAction::ResumeJob,
];

/// Decides how to consume `cmd`.
pub fn consume(cmd: &Command) -> Consumption {
    let namespace = cmd.metadata.namespace.clone().unwrap_or_default();
    let name = cmd.metadata.name.clone().unwrap_or_default();
    let mut changes = vec![Change::DeleteCommand {
        namespace: namespace.clone(),
        name: name.clone(),
    }];
    let action = BusAction::parse(&cmd.action);
    let route = match (cmd.target.as_ref(), action) {
        (Some(t), Some(a)) if t.kind == "Job" && JOB_ACTIONS.contains(&a) => Some(Route::Job(
            NamespacedName::new(namespace.clone(), t.name.clone()),
            a,
        )),
        (Some(t), Some(a @ (BusAction::OpenQueue | BusAction::CloseQueue)))
            if t.kind == "Queue" =>
        {
            Some(Route::Queue(t.name.clone(), a))
        }
        _ => None,
    };
    if route.is_none() {
        let target = cmd.target.as_ref().map_or("no target".to_string(), |t| {
            format!("{} {}", t.kind, t.name)
        });
        changes.push(Change::Event(Event {
            object: ObjectRef::of(ObjectKind::Command, &cmd.metadata),
            type_: EventType::Warning,
            reason: "CommandRefused".to_string(),
            message: format!(
                "action {:?} cannot be carried out on {target}; jobs take {}, queues take OpenQueue and CloseQueue",
                cmd.action,
                JOB_ACTIONS
                    .iter()
                    .map(|a| a.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }));
    }
    Consumption {
        command: NamespacedName::new(namespace, name),
        changes,
        route,
    }
}
