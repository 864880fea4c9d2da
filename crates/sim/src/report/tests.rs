use std::collections::BTreeMap;

use super::render_html;
use crate::metrics::{EvictionRecord, JobRecord, QueueShare, Sample, SimMetrics, Stats, Summary};

/// A small run: two resources, two queues, three jobs (one unfinished), one eviction.
fn sample_run() -> SimMetrics {
    let timeline = (0..=60)
        .map(|i| {
            let t = f64::from(i) * 60.0;
            let u = f64::from(i % 10) / 10.0;
            Sample {
                t_s: t,
                pending_jobs: (i % 4) as u32,
                running_jobs: (i % 3) as u32,
                running_pods: (i % 5) as u32,
                utilisation: [
                    ("cpu".to_string(), u),
                    ("nvidia.com/gpu".to_string(), 1.0 - u),
                ]
                .into(),
                queues: [
                    (
                        "research".to_string(),
                        QueueShare {
                            allocated: u,
                            deserved: 0.75,
                        },
                    ),
                    (
                        "prod".to_string(),
                        QueueShare {
                            allocated: 1.0 - u,
                            deserved: 0.25,
                        },
                    ),
                ]
                .into(),
            }
        })
        .collect();
    let job = |name: &str, submitted: f64, started: Option<f64>, finished: Option<f64>| JobRecord {
        name: name.to_string(),
        queue: "research".to_string(),
        pods: 2,
        submitted_s: submitted,
        started_s: started,
        finished_s: finished,
        phase: if finished.is_some() {
            "Completed"
        } else {
            "Running"
        }
        .to_string(),
        wait_s: started.map(|s| s - submitted),
        completion_s: finished.map(|f| f - submitted),
        ..Default::default()
    };
    SimMetrics {
        summary: Summary {
            simulated_s: 3600.0,
            makespan_s: 3000.0,
            sessions: 3600,
            jobs: 3,
            completed: 2,
            unfinished: 1,
            pods_bound: 6,
            evictions: 1,
            wait_s: Stats {
                count: 3,
                mean: 30.0,
                p50: 20.0,
                p90: 60.0,
                p99: 60.0,
                max: 60.0,
            },
            completion_s: Stats {
                count: 2,
                mean: 1500.0,
                p50: 1000.0,
                p90: 2000.0,
                p99: 2000.0,
                max: 2000.0,
            },
            session_ms: Stats {
                count: 3600,
                mean: 1.2,
                p50: 1.0,
                p90: 2.0,
                p99: 4.5,
                max: 9.0,
            },
            mean_utilisation: [
                ("cpu".to_string(), 0.45),
                ("nvidia.com/gpu".to_string(), 0.55),
            ]
            .into(),
            ..Summary::default()
        },
        resources: vec!["cpu".to_string(), "nvidia.com/gpu".to_string()],
        queues: vec!["research".to_string(), "prod".to_string()],
        jobs: vec![
            job("research/train-1", 0.0, Some(20.0), Some(1000.0)),
            job(
                "research/<script>alert(1)</script>",
                100.0,
                Some(160.0),
                Some(2100.0),
            ),
            job("research/late", 3000.0, None, None),
        ],
        timeline,
        evictions: vec![EvictionRecord {
            t_s: 600.0,
            pod: "research/train-1-worker-0".to_string(),
            reason: "preempted by prod/<b>urgent</b>".to_string(),
        }],
        session_ms: vec![1.0; 10],
        faults: None,
        ..Default::default()
    }
}

fn svg_count(html: &str) -> usize {
    html.matches("<svg").count()
}

#[test]
fn every_chart_is_an_svg() {
    let html = render_html(&sample_run(), "run");
    assert_eq!(svg_count(&html), 4, "utilisation, jobs, queues, completion");
    assert_eq!(html.matches("</svg>").count(), 4);
    for chart in [
        "Utilisation per resource",
        "Pending and running",
        "Queue allocated",
        "Completion-time",
    ] {
        assert!(html.contains(chart), "{chart}");
    }
    assert!(html.contains("<table>"));
    assert!(html.contains("Evictions"));
    assert!(html.contains("Unfinished jobs"));
}

#[test]
fn nothing_is_fetched() {
    let html = render_html(&sample_run(), "run");
    for attr in ["src=", "href=", "url(", "@import", "<script", "<link"] {
        assert!(!html.contains(attr), "{attr} in the page");
    }
    // The only URL allowed is the SVG namespace, which names, not fetches.
    let without_ns = html.replace(r#"xmlns="http://www.w3.org/2000/svg""#, "");
    assert!(!without_ns.contains("http://"));
    assert!(!without_ns.contains("https://"));
}

#[test]
fn user_text_is_escaped() {
    let html = render_html(&sample_run(), "what <if> & \"then\"");
    assert!(!html.contains("<script>alert(1)</script>"));
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(!html.contains("<b>urgent</b>"));
    assert!(html.contains("what &lt;if&gt; &amp; &quot;then&quot;"));
}

#[test]
fn an_empty_run_draws_without_nan() {
    let html = render_html(&SimMetrics::default(), "empty");
    assert!(!html.contains("NaN"));
    assert!(!html.contains("inf"));
    assert_eq!(svg_count(&html), 4);
    assert!(html.contains("no samples"));
    assert!(html.contains("No job finished"));
}

#[test]
fn one_sample_and_odd_values_draw_without_nan() {
    let mut m = sample_run();
    m.timeline.truncate(1);
    if let Some(s) = m.timeline.first_mut() {
        s.utilisation.insert("memory".to_string(), f64::NAN);
        s.utilisation.insert("pods".to_string(), f64::INFINITY);
    }
    m.jobs.push(JobRecord {
        name: "x/odd".to_string(),
        completion_s: Some(f64::NAN),
        finished_s: Some(f64::NAN),
        ..JobRecord::default()
    });
    m.summary
        .mean_utilisation
        .insert("memory".to_string(), f64::NAN);
    m.summary.wait_s.p50 = f64::NAN;
    let html = render_html(&m, "one");
    assert!(!html.contains("NaN"));
    assert!(!html.to_lowercase().contains("inf\""));
    assert_eq!(svg_count(&html), 4);
}

#[test]
fn a_long_run_stays_small() {
    let mut m = sample_run();
    m.timeline = (0..200_000)
        .map(|i| Sample {
            t_s: f64::from(i),
            utilisation: BTreeMap::from([("cpu".to_string(), f64::from(i % 100) / 100.0)]),
            ..Sample::default()
        })
        .collect();
    let html = render_html(&m, "long");
    assert!(html.len() < 2_000_000, "{} bytes", html.len());
}

/// Writes the small and the empty report to `target/report-{small,empty}.html`, to be opened
/// in a browser (`cargo run -p volcano-sim --example report_sample` draws a fuller day).
#[test]
fn writes_sample_reports_to_target() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target");
    if std::fs::create_dir_all(&dir).is_err() {
        return;
    }
    let small = render_html(&sample_run(), "volcano-rs sim: small report");
    let empty = render_html(&SimMetrics::default(), "volcano-rs sim: empty report");
    let _ = std::fs::write(dir.join("report-small.html"), small);
    let _ = std::fs::write(dir.join("report-empty.html"), empty);
}

fn domain(
    name: &str,
    tier: i64,
    parent: Option<&str>,
    used: f64,
    total: f64,
) -> crate::metrics::DomainOccupancy {
    crate::metrics::DomainOccupancy {
        name: name.to_string(),
        tier,
        tier_name: if tier == 1 { "leaf" } else { "spine" }.to_string(),
        parent: parent.map(str::to_string),
        nodes: 2,
        used,
        total,
        stranded: tier == 1 && used < total,
    }
}

#[test]
fn the_hyper_node_tree_is_drawn_nested_with_occupancy_only_when_there_is_one() {
    let mut m = sample_run();
    let plain = render_html(&m, "run");
    assert!(!plain.contains("Network topology"));
    assert!(!plain.contains("class=\"hn\""));
    m.topology = Some(crate::metrics::TopologyReport {
        resource: "nvidia.com/gpu".to_string(),
        gangs_ran: 5,
        gangs_in_one_tier1_domain: 3,
        topology_jobs: 2,
        gangs_waiting: 1,
        smallest_waiting_gang: Some(24.0),
        stranded: 19.0,
        domains: vec![
            domain("leaf-<a>", 1, Some("spine"), 8.0, 16.0),
            domain("leaf-b", 1, Some("spine"), 16.0, 16.0),
            domain("spine", 2, None, 24.0, 32.0),
        ],
        ..Default::default()
    });
    let page = render_html(&m, "run");
    assert!(page.contains("<h2>Network topology</h2>"));
    assert!(page.contains("3 of 5 gangs that ran stayed inside one tier-1 domain"));
    assert!(page.contains("19 free GPUs"));
    // The spine holds both leaves, nested below it, each with used / total.
    let spine = page.find("title=\"spine\"").expect("the spine is drawn");
    let leaf_a = page.find("leaf-&lt;a&gt;").expect("names are escaped");
    let leaf_b = page.find("title=\"leaf-b\"").expect("leaf-b is drawn");
    assert!(spine < leaf_a && leaf_a < leaf_b);
    assert!(page.contains("24 / 32 GPUs"));
    assert!(page.contains("8 / 16 GPUs"));
    assert!(page[spine..].contains("<ul><li>"));
    assert!(page.contains("class=\"stranded\" style=\"width:50.0%\""));
}
