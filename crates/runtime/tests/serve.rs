//! `/metrics`, `/healthz` and `/readyz` as Prometheus and a kubelet probe read them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use prometheus_client::registry::Registry;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use volcano_runtime::metrics::{ControllerMetrics, SchedulerMetrics, label};
use volcano_runtime::serve::{Readiness, serve};
use volcano_runtime::stop_channel;

async fn get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    let code = out[9..12].parse().unwrap();
    (code, out)
}

#[tokio::test]
async fn metrics_carry_volcano_names_and_readiness_follows_the_caches() {
    let mut registry = Registry::default();
    let m = SchedulerMetrics::register(&mut registry);
    let c = ControllerMetrics::register(&mut registry);
    m.pods_bound.inc_by(3);
    m.preemption_attempts.inc();
    m.e2e_latency_ms.observe(12.0);
    c.queue_pod_groups[2].set(label("queue_name", "research"), 4.0);
    let ready = Readiness::default();
    let (_trigger, stop) = stop_channel();
    let (addr, _) = serve(
        "127.0.0.1:0".parse().unwrap(),
        registry,
        ready.clone(),
        stop,
    )
    .await
    .unwrap();

    assert_eq!(get(addr, "/healthz").await.0, 200);
    assert_eq!(get(addr, "/readyz").await.0, 503);
    ready.set_ready();
    assert_eq!(get(addr, "/readyz").await.0, 200);

    let (code, body) = get(addr, "/metrics").await;
    assert_eq!(code, 200);
    assert!(
        body.contains("content-type: text/plain; version=0.0.4"),
        "Volcano's text format: {body}"
    );
    assert!(!body.contains("# EOF"), "{body}");
    for needle in [
        "volcano_pods_bound_total 3",
        "volcano_total_preemption_attempts 1\n",
        "# TYPE volcano_total_preemption_attempts counter",
        "volcano_e2e_scheduling_latency_milliseconds_count 1",
        "volcano_e2e_scheduling_latency_milliseconds_bucket{le=\"1\"} 0",
        "volcano_queue_pod_group_running_count{queue_name=\"research\"} 4",
        "# TYPE volcano_pods_bound_total counter",
        "# TYPE volcano_unschedule_job_count gauge",
    ] {
        assert!(body.contains(needle), "{needle} missing from:\n{body}");
    }
}
