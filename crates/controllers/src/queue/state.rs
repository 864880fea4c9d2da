//! The queue state machine: Open, Closing, Closed (and Unknown) under open, close and sync.

use volcano_api::bus::BusAction;
use volcano_api::scheduling::queue_state;

/// The state a queue moves to under `action`, given whether PodGroups remain in it. An empty
/// state counts as Open; a queue closes at once when empty, else it is Closing until it is.
pub fn next_state(current: &str, action: BusAction, has_pod_groups: bool) -> &'static str {
    let closed_or_closing = if has_pod_groups {
        queue_state::CLOSING
    } else {
        queue_state::CLOSED
    };
    match (current, action) {
        (_, BusAction::OpenQueue) => queue_state::OPEN,
        (queue_state::CLOSED, _) => queue_state::CLOSED,
        (queue_state::UNKNOWN, BusAction::CloseQueue) => closed_or_closing,
        (queue_state::UNKNOWN, _) => queue_state::UNKNOWN,
        (queue_state::CLOSING, _) => closed_or_closing,
        (_, BusAction::CloseQueue) => closed_or_closing,
        _ => queue_state::OPEN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use BusAction::{CloseQueue, OpenQueue, SyncQueue};
    use queue_state::{CLOSED, CLOSING, OPEN, UNKNOWN};

    #[test]
    fn every_row_of_the_queue_state_machine() {
        let rows: &[(&str, BusAction, bool, &str)] = &[
            ("", SyncQueue, true, OPEN),
            (OPEN, OpenQueue, true, OPEN),
            (OPEN, SyncQueue, true, OPEN),
            (OPEN, CloseQueue, false, CLOSED),
            (OPEN, CloseQueue, true, CLOSING),
            (CLOSED, OpenQueue, false, OPEN),
            (CLOSED, CloseQueue, true, CLOSED),
            (CLOSED, SyncQueue, true, CLOSED),
            (CLOSING, OpenQueue, true, OPEN),
            (CLOSING, CloseQueue, true, CLOSING),
            (CLOSING, SyncQueue, true, CLOSING),
            (CLOSING, SyncQueue, false, CLOSED),
            (CLOSING, CloseQueue, false, CLOSED),
            (UNKNOWN, OpenQueue, true, OPEN),
            (UNKNOWN, CloseQueue, true, CLOSING),
            (UNKNOWN, CloseQueue, false, CLOSED),
            (UNKNOWN, SyncQueue, false, UNKNOWN),
        ];
        for &(state, action, has_pgs, want) in rows {
            assert_eq!(
                next_state(state, action, has_pgs),
                want,
                "{state:?} + {action} (PodGroups left: {has_pgs})"
            );
        }
    }
}
