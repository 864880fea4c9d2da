//! The report's network-topology section: where gangs landed, how long jobs with a network
//! topology waited, the GPUs stranded in small domains, and the HyperNode tree, each domain
//! with its occupancy at the end of the run. Only runs with HyperNodes have it; its style
//! comes with it, so the page of a run without them is as it always was.

use std::fmt::Write;

use super::format::{duration, escape};
use crate::metrics::{DomainOccupancy, TopologyReport};

/// Trees with more domains than this start folded below the top tier.
const OPEN_UP_TO: usize = 64;

const CSS: &str = "<style>\
.hn, .hn ul { list-style: none; margin: 0; padding-left: 1.2em; }\
.hn { padding-left: 0; }\
.hn-row { display: grid; grid-template-columns: 12em 6em 1fr 8em; gap: 8px; align-items: center; margin-top: 4px; font-size: 13px; }\
.hn-row .bar > span.stranded { background: #c9822b; }\
.hn summary { cursor: pointer; }\
</style>";

/// The section's body.
pub(super) fn section(t: &TopologyReport) -> String {
    let mut out = String::from(CSS);
    let unit = if t.resource == "cpu" { "CPU" } else { "GPUs" };
    let _ = write!(
        out,
        "<p>{} of {} gangs that ran stayed inside one tier-1 domain.",
        t.gangs_in_one_tier1_domain, t.gangs_ran
    );
    if t.topology_jobs > 0 {
        let wait = if t.topology_wait_s.count == 0 {
            "none started".to_string()
        } else {
            format!(
                "waited {} on average from submission to start",
                duration(t.topology_wait_s.mean)
            )
        };
        let _ = write!(
            out,
            " {} jobs with a network topology: {wait}; {} in all under the reason NetworkTopology.",
            t.topology_jobs,
            duration(t.network_topology_wait_s)
        );
    }
    match t.smallest_waiting_gang {
        Some(need) => {
            let _ = write!(
                out,
                " At the end, {} free {unit} sat in tier-1 domains too small for any of the {} waiting gangs (the smallest needs {}; such domains are drawn in orange).</p>",
                number(t.stranded),
                t.gangs_waiting,
                number(need)
            );
        }
        None => out.push_str(" No gang was waiting at the end.</p>"),
    }
    let open = t.domains.len() <= OPEN_UP_TO;
    out.push_str("<ul class=\"hn\">");
    for root in t.children_of(None) {
        tree(&mut out, t, root, unit, open, true);
    }
    out.push_str("</ul>");
    out
}

fn number(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

/// One domain and, nested, its members.
/// Every domain is unfolded when `open_all`, else only the top ones.
fn tree(
    out: &mut String,
    t: &TopologyReport,
    d: &DomainOccupancy,
    unit: &str,
    open_all: bool,
    top: bool,
) {
    let share = if d.total > 0.0 {
        (d.used / d.total * 100.0).clamp(0.0, 100.0)
    } else {
        0.0
    };
    let tier = if d.tier_name.is_empty() {
        format!("tier {}", d.tier)
    } else {
        d.tier_name.clone()
    };
    let class = if d.stranded {
        " class=\"stranded\""
    } else {
        ""
    };
    let row = format!(
        "<div class=\"hn-row\"><span class=\"bar-name\" title=\"{name}\">{name}</span><span>{tier}</span>\
         <div class=\"bar\"><span{class} style=\"width:{share:.1}%\"></span></div>\
         <span class=\"bar-value\">{} / {} {unit}</span></div>",
        number(d.used),
        number(d.total),
        name = escape(&d.name),
        tier = escape(&tier),
    );
    let children: Vec<&DomainOccupancy> = t.children_of(Some(d.name.as_str())).collect();
    if children.is_empty() {
        let _ = write!(out, "<li>{row}</li>");
        return;
    }
    let open = if open_all || top { " open" } else { "" };
    let _ = write!(out, "<li><details{open}><summary>{row}</summary><ul>");
    for c in children {
        tree(out, t, c, unit, open_all, false);
    }
    out.push_str("</ul></details></li>");
}
