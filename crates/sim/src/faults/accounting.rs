//! Resource sums done from the objects alone, never from the scheduler's own model: the
//! invariant oracle's accounting (`volcano_scheduler::invariants::accounting`), so that what
//! the simulator's faults and its invariants count is one sum.

pub(crate) use volcano_scheduler::invariants::accounting::{Res, add, pod_request};
