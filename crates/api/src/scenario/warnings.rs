//! Queue set-ups Volcano's scheduler runs with although its webhook would refuse them: they are
//! accepted, with a warning that says what the scheduler will make of them.

use std::collections::BTreeMap;

use super::Objects;
use crate::keys;
use crate::resources::{canonical_amount, format_amount};
use crate::scheduling::{Queue, ResourceList};

/// Resource name → canonical amount; entries that do not parse were already refused on load.
fn amounts(list: Option<&ResourceList>) -> BTreeMap<String, i64> {
    list.into_iter()
        .flatten()
        .filter_map(|(name, q)| canonical_amount(name, &q.0).ok().map(|v| (name.clone(), v)))
        .collect()
}

fn guarantee(q: &Queue) -> BTreeMap<String, i64> {
    amounts(q.spec.guarantee.as_ref().and_then(|g| g.resource.as_ref()))
}

fn describe(r: &BTreeMap<String, i64>) -> String {
    r.iter()
        .map(|(name, v)| format!("{name} {}", format_amount(name, *v)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn parent_of(q: &Queue) -> &str {
    match q.metadata.name.as_deref() {
        Some(keys::ROOT_QUEUE) => "",
        _ if q.spec.parent.is_empty() => keys::ROOT_QUEUE,
        _ => &q.spec.parent,
    }
}

/// Every warning about the scenario's queue guarantees: a child promised more than its parent
/// (alone or with its siblings), and top-level promises above what the cluster's nodes have.
pub fn queue_warnings(objects: &Objects) -> Vec<String> {
    let mut warnings = Vec::new();
    let by_name: BTreeMap<&str, &Queue> = objects
        .queues
        .iter()
        .map(|q| (q.metadata.name.as_deref().unwrap_or_default(), q))
        .collect();
    let mut children_sum: BTreeMap<&str, BTreeMap<String, i64>> = BTreeMap::new();
    for (&name, &q) in &by_name {
        let parent = parent_of(q);
        let mine = guarantee(q);
        let capability = amounts(q.spec.capability.as_ref());
        let beyond: BTreeMap<String, i64> = mine
            .iter()
            .filter(|(r, v)| capability.get(*r).is_some_and(|c| *c > 0 && *v > c))
            .map(|(r, v)| (r.clone(), *v))
            .collect();
        if !beyond.is_empty() {
            let limit: BTreeMap<String, i64> = beyond
                .keys()
                .map(|r| (r.clone(), capability.get(r).copied().unwrap_or(0)))
                .collect();
            warnings.push(format!(
                "queue {name}: guarantee {} exceeds its capability {}; \
                 the scheduler guarantees only up to the capability",
                describe(&beyond),
                describe(&limit)
            ));
        }
        if let Some(p) = by_name.get(parent).filter(|_| parent != keys::ROOT_QUEUE) {
            let theirs = guarantee(p);
            let over: BTreeMap<String, i64> = mine
                .iter()
                .filter(|(r, v)| theirs.get(*r).is_some_and(|pv| *v > pv))
                .map(|(r, v)| (r.clone(), *v))
                .collect();
            if !over.is_empty() {
                let limit: BTreeMap<String, i64> = over
                    .keys()
                    .map(|r| (r.clone(), theirs.get(r).copied().unwrap_or(0)))
                    .collect();
                warnings.push(format!(
                    "queue {name}: guarantee {} exceeds its parent {parent}'s guarantee {}; \
                     the scheduler keeps it but the parent cannot honour it",
                    describe(&over),
                    describe(&limit)
                ));
            }
        }
        if !parent.is_empty() {
            let sum = children_sum.entry(parent).or_default();
            for (r, v) in mine {
                let total = sum.entry(r).or_insert(0);
                *total = total.saturating_add(v);
            }
        }
    }
    for (parent, sum) in &children_sum {
        if *parent == keys::ROOT_QUEUE {
            let total = cluster_total(objects);
            let over: BTreeMap<String, i64> = sum
                .iter()
                .filter(|(r, v)| **v > total.get(*r).copied().unwrap_or(0))
                .map(|(r, v)| (r.clone(), *v))
                .collect();
            if !over.is_empty() {
                let have: BTreeMap<String, i64> = over
                    .keys()
                    .map(|r| (r.clone(), total.get(r).copied().unwrap_or(0)))
                    .collect();
                warnings.push(format!(
                    "queue guarantees add up to {} but the cluster has {}; each queue still gets \
                     at most its own guarantee and nothing is left to share",
                    describe(&over),
                    describe(&have)
                ));
            }
            continue;
        }
        let Some(p) = by_name.get(parent) else {
            continue;
        };
        let theirs = guarantee(p);
        let over: BTreeMap<String, i64> = sum
            .iter()
            .filter(|(r, v)| theirs.get(*r).is_some_and(|pv| *v > pv))
            .map(|(r, v)| (r.clone(), *v))
            .collect();
        if !over.is_empty() && children_count(&by_name, parent) > 1 {
            warnings.push(format!(
                "queue {parent}: its children's guarantees add up to {}, above its own guarantee {}",
                describe(&over),
                describe(&theirs)
            ));
        }
    }
    warnings
}

fn children_count(by_name: &BTreeMap<&str, &Queue>, parent: &str) -> usize {
    by_name.values().filter(|q| parent_of(q) == parent).count()
}

/// Σ allocatable (or capacity) of every node.
fn cluster_total(objects: &Objects) -> BTreeMap<String, i64> {
    let mut total: BTreeMap<String, i64> = BTreeMap::new();
    for node in &objects.nodes {
        let st = node.status.as_ref();
        let list = st
            .and_then(|s| s.allocatable.as_ref())
            .or_else(|| st.and_then(|s| s.capacity.as_ref()));
        for (r, v) in amounts(list) {
            let sum = total.entry(r).or_insert(0);
            *sum = sum.saturating_add(v);
        }
    }
    total
}
