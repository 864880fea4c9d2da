//! How long one session takes over 5,000 nodes in 10 zones with 5,000 pending pods (500 gangs
//! of 10), every pod spreading its gang over zones with `maxSkew: 1, DoNotSchedule`, against
//! the same pods without constraints. Timed, so ignored by default; run it with
//! `cargo test --release -p volcano-scheduler --test topology_spread_scale -- --ignored --nocapture`.

#[allow(dead_code)] // The session helpers are shared; this test needs only some of them.
mod support;

use std::collections::BTreeMap;
use std::time::Instant;

use volcano_api::Objects;
use volcano_api::k8s_openapi::api::core::v1::TopologySpreadConstraint;
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use volcano_scheduler::cache::{CacheOptions, build_snapshot};
use volcano_scheduler::conf::SchedulerConf;
use volcano_scheduler::run_session;
use volcano_testkit::build::*;

const NODES: usize = 5_000;
const ZONES: usize = 10;
const GANGS: usize = 500;
const GANG_SIZE: usize = 10;
const ZONE: &str = "topology.kubernetes.io/zone";

/// How the pods of a gang spread.
#[derive(Clone, Copy, Debug)]
enum Spread {
    None,
    /// Each gang over zones, selecting its own pods.
    PerGang,
    /// Every pod over zones, selecting all pods.
    Shared,
}

fn objects(spread: Spread) -> Objects {
    let mut objs = cluster()
        .with(queue("q"))
        .with_all((0..NODES).map(|i| {
            node(&format!("node-{i:05}"))
                .cpu(32)
                .mem_gi(128)
                .label(ZONE, &format!("zone-{}", i % ZONES))
        }))
        .objects();
    for g in 0..GANGS {
        let name = format!("job-{g:04}");
        let (pg, pods) = gang("bench", &name)
            .queue("q")
            .min(GANG_SIZE as i32)
            .pods(GANG_SIZE, 1000, 2 * GI)
            .build();
        objs.pod_groups.push(pg);
        for mut p in pods {
            let app = match spread {
                Spread::Shared => "bench".to_string(),
                _ => name.clone(),
            };
            p.metadata.labels = Some(BTreeMap::from([("app".to_string(), app.clone())]));
            if !matches!(spread, Spread::None)
                && let Some(spec) = p.spec.as_mut()
            {
                spec.topology_spread_constraints = Some(vec![TopologySpreadConstraint {
                    max_skew: 1,
                    topology_key: ZONE.into(),
                    when_unsatisfiable: "DoNotSchedule".into(),
                    label_selector: Some(LabelSelector {
                        match_labels: Some(BTreeMap::from([("app".to_string(), app)])),
                        ..Default::default()
                    }),
                    ..Default::default()
                }]);
            }
            objs.pods.push(p.into());
        }
    }
    objs
}

#[test]
#[ignore = "timing; run in release with --ignored --nocapture"]
fn session_over_5000_nodes_with_5000_spreading_pods() {
    let conf = SchedulerConf::default_conf();
    let pods = (GANGS * GANG_SIZE) as f64;
    for spread in [Spread::None, Spread::PerGang, Spread::Shared] {
        let objs = objects(spread);
        let snap = match build_snapshot(&objs, &CacheOptions::default()) {
            Ok(s) => s,
            Err(e) => panic!("objects rejected: {e}"),
        };
        let t0 = Instant::now();
        let d = run_session(snap, &conf, support::session_options(1));
        let took = t0.elapsed().as_secs_f64();
        eprintln!(
            "{spread:?}: run_session {took:.3} s ({:.0} pods/s), {} bound",
            pods / took,
            d.binds.len()
        );
        assert_eq!(d.binds.len(), GANGS * GANG_SIZE);
    }
}
