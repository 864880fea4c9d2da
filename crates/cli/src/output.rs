//! Rendering a run: the JSON contract of SCENARIO.md, and a summary for people.

use std::fmt::Write;

use serde_json::{Map, Value, json};

use volcano_sim::schedule::Run;

/// The JSON object of the `schedule` contract.
pub fn json(run: &Run) -> Result<String, serde_json::Error> {
    let podgroups: Map<String, Value> = run
        .podgroups
        .iter()
        .map(|(k, s)| {
            let conditions: Vec<Value> = s
                .conditions
                .iter()
                .map(|c| json!({"type": c.type_, "status": c.status, "reason": c.reason, "message": c.message}))
                .collect();
            (
                k.clone(),
                json!({"phase": s.phase, "running": s.running, "succeeded": s.succeeded, "failed": s.failed, "conditions": conditions}),
            )
        })
        .collect();
    let queues: Map<String, Value> = run
        .queues
        .iter()
        .map(|(k, q)| {
            let allocated: Map<String, Value> = q
                .allocated
                .iter()
                .flatten()
                .map(|(r, v)| (r.clone(), Value::String(v.0.clone())))
                .collect();
            (k.clone(), json!({"state": q.state, "allocated": allocated}))
        })
        .collect();
    let unschedulable: Map<String, Value> = run
        .unschedulable
        .iter()
        .map(|(k, u)| (k.clone(), json!({"reason": u.reason, "message": u.message})))
        .collect();
    let jobs: Map<String, Value> = run
        .jobs
        .iter()
        .map(|(k, j)| {
            (
                k.clone(),
                json!({"phase": j.phase, "running": j.running, "pending": j.pending, "succeeded": j.succeeded, "failed": j.failed}),
            )
        })
        .collect();
    let events: Vec<Value> = run
        .events
        .iter()
        .map(|e| json!({"object": e.object_path().to_string(), "type": e.type_.as_str(), "reason": e.reason, "message": e.message}))
        .collect();
    let mut out = json!({
        "sessions": run.sessions,
        "bindings": run.bindings,
        "evictions": run.evictions,
        "evictionReasons": run.eviction_reasons,
        "pipelined": run.pipelined,
        "podgroups": podgroups,
        "queues": queues,
        "jobs": jobs,
        "unschedulable": unschedulable,
        "events": events,
        "outOfSyncNodes": run.out_of_sync_nodes,
    });
    // Only when a claim was bound, so runs without volumes print what they always did.
    if !run.volumes.is_empty()
        && let Some(o) = out.as_object_mut()
    {
        let volumes: Map<String, Value> = run
            .volumes
            .iter()
            .map(|(claim, (node, volume))| (claim.clone(), json!({"node": node, "volume": volume})))
            .collect();
        o.insert("volumes".to_string(), Value::Object(volumes));
    }
    serde_json::to_string_pretty(&out)
}

/// A summary for people: what went where, and why the rest waits.
pub fn text(run: &Run) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} session(s), {} pod(s) bound",
        run.sessions,
        run.bindings.len()
    );
    if !run.bindings.is_empty() {
        let _ = writeln!(s, "\nBOUND");
        for (pod, node) in &run.bindings {
            let _ = writeln!(s, "  {pod:<40} -> {node}");
        }
    }
    if !run.volumes.is_empty() {
        let _ = writeln!(s, "\nVOLUMES (claims bound at scheduling)");
        for (claim, (node, volume)) in &run.volumes {
            let what = volume.as_deref().map_or_else(
                || format!("provisioned for {node}"),
                |v| format!("{v} on {node}"),
            );
            let _ = writeln!(s, "  {claim:<40} -> {what}");
        }
    }
    if !run.jobs.is_empty() {
        let _ = writeln!(s, "\nJOBS");
        for (job, j) in &run.jobs {
            let _ = writeln!(
                s,
                "  {job:<40} {:<10} pending {} running {} succeeded {} failed {}",
                j.phase, j.pending, j.running, j.succeeded, j.failed
            );
        }
    }
    if !run.pipelined.is_empty() {
        let _ = writeln!(
            s,
            "\nPIPELINED (node reserved, waiting for resources being released)"
        );
        for (pod, node) in &run.pipelined {
            let _ = writeln!(s, "  {pod:<40} -> {node}");
        }
    }
    if !run.evictions.is_empty() {
        let _ = writeln!(s, "\nEVICTED");
        for pod in &run.evictions {
            match run.eviction_reasons.get(pod) {
                Some(why) => {
                    let _ = writeln!(s, "  {pod:<40} {why}");
                }
                None => {
                    let _ = writeln!(s, "  {pod}");
                }
            }
        }
    }
    let _ = writeln!(s, "\nPODGROUPS");
    for (pg, st) in &run.podgroups {
        let _ = writeln!(s, "  {pg:<40} {:<10} running {}", st.phase, st.running);
    }
    if !run.unschedulable.is_empty() {
        let _ = writeln!(s, "\nWAITING");
        for (pg, u) in &run.unschedulable {
            let _ = writeln!(s, "  {pg} ({}): {}", u.reason, u.message);
        }
    }
    let _ = writeln!(s, "\nQUEUES");
    for (q, st) in &run.queues {
        let alloc: Vec<String> = st
            .allocated
            .iter()
            .flatten()
            .map(|(r, v)| format!("{r} {}", v.0))
            .collect();
        let alloc = if alloc.is_empty() {
            "nothing".to_string()
        } else {
            alloc.join(", ")
        };
        let state = if st.state.is_empty() {
            "Open"
        } else {
            st.state.as_str()
        };
        let _ = writeln!(s, "  {q:<20} {state:<8} allocated {alloc}");
    }
    if !run.out_of_sync_nodes.is_empty() {
        let _ = writeln!(
            s,
            "\nOUT OF SYNC NODES (pods need more than the node has; no new pods placed there)"
        );
        for n in &run.out_of_sync_nodes {
            let _ = writeln!(s, "  {n}");
        }
    }
    s.trim_end().to_string()
}

/// Writes `text` and a newline to stdout. A reader that stopped early (`| head`) is not an
/// error worth reporting.
pub fn print(text: &str) -> Result<(), crate::Failure> {
    use anyhow::Context;
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    match out
        .write_all(text.as_bytes())
        .and_then(|_| out.write_all(b"\n"))
    {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other
            .context("writing the result to stdout")
            .map_err(crate::Failure::Internal),
    }
}

/// Writes `report` as one pretty JSON object, or as `text` renders it for people.
pub fn print_report<T: serde::Serialize>(
    format: crate::Format,
    report: &T,
    text: impl FnOnce(&T) -> String,
) -> Result<(), crate::Failure> {
    use anyhow::Context;
    let rendered = match format {
        crate::Format::Json => serde_json::to_string_pretty(report)
            .context("cannot write the report as JSON")
            .map_err(crate::Failure::Internal)?,
        crate::Format::Text => text(report),
    };
    print(rendered.trim_end())
}
