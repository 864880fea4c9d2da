//! The scheduler's queue series (Volcano's `pkg/scheduler/metrics/queue.go`): allocated,
//! request, deserved, capability, real capability and inqueue resources, share, weight and
//! overused, per queue, written from a session's queue reports.

use prometheus_client::registry::Registry;
use volcano_scheduler::framework::report::{Amounts, QueueReport};

use super::{GaugeVec, Label, Labels2, label};

/// One resource series set: `volcano_queue_<what>_{milli_cpu,memory_bytes,scalar_resources}`.
#[derive(Clone, Debug)]
pub struct ResourceGauges {
    /// `..._milli_cpu{queue_name}`.
    pub milli_cpu: GaugeVec<Label>,
    /// `..._memory_bytes{queue_name}`.
    pub memory_bytes: GaugeVec<Label>,
    /// `..._scalar_resources{queue_name,resource}`, in milli-units as Volcano's.
    pub scalar: GaugeVec<Labels2>,
}

impl ResourceGauges {
    fn new() -> Self {
        ResourceGauges {
            milli_cpu: GaugeVec::new(),
            memory_bytes: GaugeVec::new(),
            scalar: GaugeVec::new(),
        }
    }

    /// Registers the three families; `help` holds Volcano's help texts, CPU first.
    fn register(&self, reg: &mut Registry, what: &str, help: [&str; 3]) {
        self.milli_cpu
            .register(reg, &format!("volcano_queue_{what}_milli_cpu"), help[0]);
        self.memory_bytes
            .register(reg, &format!("volcano_queue_{what}_memory_bytes"), help[1]);
        self.scalar.register(
            reg,
            &format!("volcano_queue_{what}_scalar_resources"),
            help[2],
        );
    }

    /// Sets the queue's amounts; CPU and memory are always written (0 when absent), as
    /// Volcano writes them.
    fn set(&self, queue: &str, amounts: &Amounts) {
        self.set_present(queue, amounts, Some(0.0));
    }

    /// Sets the queue's amounts; CPU and memory are written as `absent` when `amounts` lacks
    /// them, or not at all when `absent` is `None` (a limit that is not set is no limit of 0).
    fn set_present(&self, queue: &str, amounts: &Amounts, absent: Option<f64>) {
        let mut cpu = absent;
        let mut memory = absent;
        for (name, v) in amounts {
            // Gauges are floats; the report's integers convert here, where they are written.
            let v = *v as f64;
            match name.as_str() {
                "cpu" => cpu = Some(v),
                "memory" => memory = Some(v),
                _ => self.scalar.set(
                    [
                        ("queue_name", queue.to_string()),
                        ("resource", name.clone()),
                    ],
                    v,
                ),
            }
        }
        if let Some(cpu) = cpu {
            self.milli_cpu.set(label("queue_name", queue), cpu);
        }
        if let Some(memory) = memory {
            self.memory_bytes.set(label("queue_name", queue), memory);
        }
    }

    fn sweep(&self) {
        self.milli_cpu.sweep();
        self.memory_bytes.sweep();
        self.scalar.sweep();
    }
}

/// Volcano's per-queue scheduler series.
#[derive(Clone, Debug)]
pub struct QueueMetrics {
    /// `volcano_queue_allocated_*`.
    pub allocated: ResourceGauges,
    /// `volcano_queue_request_*`.
    pub request: ResourceGauges,
    /// `volcano_queue_deserved_*`.
    pub deserved: ResourceGauges,
    /// `volcano_queue_capacity_*`: `spec.capability`.
    pub capacity: ResourceGauges,
    /// `volcano_queue_real_capacity_*`.
    pub real_capacity: ResourceGauges,
    /// `volcano_queue_inqueue_*`.
    pub inqueue: ResourceGauges,
    /// `volcano_queue_share{queue_name}`.
    pub share: GaugeVec<Label>,
    /// `volcano_queue_weight{queue_name}`.
    pub weight: GaugeVec<Label>,
    /// `volcano_queue_overused{queue_name}`: 1 or 0.
    pub overused: GaugeVec<Label>,
}

impl QueueMetrics {
    pub(super) fn register(reg: &mut Registry) -> Self {
        let m = QueueMetrics {
            allocated: ResourceGauges::new(),
            request: ResourceGauges::new(),
            deserved: ResourceGauges::new(),
            capacity: ResourceGauges::new(),
            real_capacity: ResourceGauges::new(),
            inqueue: ResourceGauges::new(),
            share: GaugeVec::new(),
            weight: GaugeVec::new(),
            overused: GaugeVec::new(),
        };
        m.allocated.register(
            reg,
            "allocated",
            [
                "Allocated CPU count for one queue",
                "Allocated memory for one queue",
                "Allocated scalar resources for one queue",
            ],
        );
        m.request.register(
            reg,
            "request",
            [
                "Request CPU count for one queue",
                "Request memory for one queue",
                "Request scalar resources for one queue",
            ],
        );
        m.deserved.register(
            reg,
            "deserved",
            [
                "Deserved CPU count for one queue",
                "Deserved memory for one queue",
                "Deserved scalar resources for one queue",
            ],
        );
        m.share
            .register(reg, "volcano_queue_share", "Share for one queue");
        m.weight
            .register(reg, "volcano_queue_weight", "Weight for one queue");
        m.overused
            .register(reg, "volcano_queue_overused", "If one queue is overused");
        m.capacity.register(
            reg,
            "capacity",
            [
                "Capacity CPU count for one queue",
                "Capacity memory for one queue",
                "Capacity scalar resources for one queue",
            ],
        );
        m.real_capacity.register(
            reg,
            "real_capacity",
            [
                "Capacity CPU count for one queue",
                "Capacity memory for one queue",
                "Capacity scalar resources for one queue",
            ],
        );
        m.inqueue.register(
            reg,
            "inqueue",
            [
                "Inqueue CPU for admitted but not yet running jobs in one queue",
                "Inqueue memory for admitted but not yet running jobs in one queue",
                "Inqueue scalar resources for admitted but not yet running jobs in one queue",
            ],
        );
        m
    }

    /// Writes every queue of the session and removes the series of queues it no longer has.
    /// Queues that no share-keeping plugin weighs export zero request and inqueue and no
    /// deserved or real capacity, as Volcano's `proportion` leaves them; a capability
    /// dimension that is not set exports nothing rather than 0.
    pub fn record(&self, reports: &[QueueReport]) {
        for q in reports {
            let name = q.name.as_str();
            self.allocated.set(name, &q.allocated);
            self.capacity.set_present(name, &q.capability, None);
            self.weight
                .set(label("queue_name", name), f64::from(q.weight));
            self.overused.set(
                label("queue_name", name),
                if q.overused { 1.0 } else { 0.0 },
            );
            match &q.share {
                Some(s) => {
                    self.request.set(name, &s.request);
                    self.inqueue.set(name, &s.inqueue);
                    self.deserved.set(name, &s.deserved);
                    self.real_capacity
                        .set_present(name, &s.real_capability, None);
                    self.share.set(label("queue_name", name), s.share);
                }
                None => {
                    self.request.set(name, &Vec::new());
                    self.inqueue.set(name, &Vec::new());
                    self.share.set(label("queue_name", name), 0.0);
                }
            }
        }
        for r in [
            &self.allocated,
            &self.request,
            &self.deserved,
            &self.capacity,
            &self.real_capacity,
            &self.inqueue,
        ] {
            r.sweep();
        }
        self.share.sweep();
        self.weight.sweep();
        self.overused.sweep();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::render;
    use volcano_scheduler::framework::report::ShareReport;

    fn report(name: &str, gpus: i64) -> QueueReport {
        let amounts = vec![
            ("cpu".to_string(), 2000),
            ("memory".to_string(), 4_000_000_000),
            ("nvidia.com/gpu".to_string(), gpus),
        ];
        QueueReport {
            name: name.to_string(),
            weight: 2,
            allocated: amounts.clone(),
            capability: amounts.clone(),
            overused: false,
            share: Some(ShareReport {
                deserved: amounts.clone(),
                real_capability: amounts.clone(),
                request: amounts.clone(),
                inqueue: amounts,
                share: 0.5,
            }),
        }
    }

    #[test]
    fn a_deleted_queue_stops_exporting_after_the_next_session() {
        let mut reg = Registry::default();
        let m = QueueMetrics::register(&mut reg);
        m.record(&[report("research", 1000), report("gone", 1000)]);
        let before = render(&reg).unwrap();
        assert!(before.contains("volcano_queue_deserved_milli_cpu{queue_name=\"gone\"} 2000"));
        assert!(before.contains(
            "volcano_queue_allocated_scalar_resources{queue_name=\"gone\",resource=\"nvidia.com/gpu\"} 1000"
        ));

        let mut unbounded = report("open-ended", 0);
        unbounded.capability.clear();
        m.record(&[report("research", 1000), unbounded]);
        let after = render(&reg).unwrap();
        assert!(
            after.contains("volcano_queue_allocated_milli_cpu{queue_name=\"open-ended\"} 2000")
        );
        assert!(!after.contains("volcano_queue_capacity_milli_cpu{queue_name=\"open-ended\"}"));
        assert!(!after.contains("\"gone\""), "{after}");
        assert!(after.contains("volcano_queue_share{queue_name=\"research\"} 0.5"));
        assert!(after.contains("volcano_queue_weight{queue_name=\"research\"} 2"));
    }
}
