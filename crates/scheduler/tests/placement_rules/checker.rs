//! An independent, naive reading of kube-scheduler's required placement rules, to judge the
//! scheduler's bindings: it walks every pod for every pod (fine for test-sized clusters) and
//! shares no code with the plugins.

use std::collections::{BTreeMap, BTreeSet};

use volcano_api::Objects;
use volcano_api::k8s_openapi::api::core::v1::{Node, Pod, PodAffinityTerm};
use volcano_api::k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

type Labels = BTreeMap<String, String>;

fn labels_of_pod(p: &Pod) -> Labels {
    p.metadata.labels.clone().unwrap_or_default()
}

fn ns(p: &Pod) -> &str {
    p.metadata.namespace.as_deref().unwrap_or("default")
}

fn node_of(p: &Pod) -> Option<&str> {
    p.spec
        .as_ref()?
        .node_name
        .as_deref()
        .filter(|n| !n.is_empty())
}

fn node_label<'a>(n: &'a Node, key: &str) -> Option<&'a str> {
    n.metadata.labels.as_ref()?.get(key).map(String::as_str)
}

/// matchLabels and In/NotIn/Exists/DoesNotExist, written again on purpose.
fn selects(sel: &LabelSelector, labels: &Labels) -> bool {
    let labels_ok = sel
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    let exprs_ok = sel.match_expressions.iter().flatten().all(|e| {
        let vals = e.values.clone().unwrap_or_default();
        let v = labels.get(&e.key);
        match e.operator.as_str() {
            "In" => v.is_some_and(|v| vals.contains(v)),
            "NotIn" => v.is_none_or(|v| !vals.contains(v)),
            "Exists" => v.is_some(),
            "DoesNotExist" => v.is_none(),
            _ => false,
        }
    });
    labels_ok && exprs_ok
}

/// Whether `term` of a pod in namespace `owner_ns` selects `other` (namespaces as the term says,
/// its own namespace when it says nothing; the generated terms use no namespaceSelector other
/// than `{}`).
fn term_selects(term: &PodAffinityTerm, owner_ns: &str, other: &Pod) -> bool {
    let in_ns = match (&term.namespaces, &term.namespace_selector) {
        (_, Some(sel)) if sel.match_labels.is_none() && sel.match_expressions.is_none() => true,
        (Some(list), _) if !list.is_empty() => list.iter().any(|n| n == ns(other)),
        _ => ns(other) == owner_ns,
    };
    in_ns
        && term
            .label_selector
            .as_ref()
            .is_some_and(|s| selects(s, &labels_of_pod(other)))
}

/// The pods on nodes after the session, each with its node.
pub struct Placed<'a> {
    nodes: BTreeMap<&'a str, &'a Node>,
    pods: Vec<(&'a Pod, &'a str)>,
}

impl<'a> Placed<'a> {
    /// The pods of `after` that are on a node and not finished.
    pub fn of(after: &'a Objects) -> Self {
        let nodes = after
            .nodes
            .iter()
            .filter_map(|n| Some((n.metadata.name.as_deref()?, n)))
            .collect();
        let pods = after
            .pods
            .iter()
            .filter(|p| {
                let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
                !matches!(phase, Some("Succeeded") | Some("Failed"))
            })
            .filter_map(|p| Some((&**p, node_of(p)?)))
            .collect();
        Placed { nodes, pods }
    }

    fn domain(&self, node: &str, key: &str) -> Option<&'a str> {
        self.nodes.get(node).and_then(|n| node_label(n, key))
    }

    fn same_domain(&self, a: &str, b: &str, key: &str) -> bool {
        match (self.domain(a, key), self.domain(b, key)) {
            (Some(x), Some(y)) => x == y,
            _ => false,
        }
    }

    /// Every broken required rule of pod `p` (bound in the session to `node`), as text.
    pub fn broken(&self, p: &Pod, node: &str) -> Vec<String> {
        let mut out = Vec::new();
        let name = p.metadata.name.as_deref().unwrap_or("");
        let others = || {
            self.pods
                .iter()
                .filter(move |(o, _)| o.metadata.name.as_deref() != Some(name) || ns(o) != ns(p))
        };
        let spec = p.spec.as_ref();
        let affinity = spec.and_then(|s| s.affinity.as_ref());
        let anti = affinity
            .and_then(|a| a.pod_anti_affinity.as_ref())
            .and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .clone()
            })
            .unwrap_or_default();
        for term in &anti {
            for (o, on) in others() {
                if term_selects(term, ns(p), o) && self.same_domain(node, on, &term.topology_key) {
                    out.push(format!(
                        "{name} on {node} shares {} with {:?} on {on} despite its anti-affinity",
                        term.topology_key, o.metadata.name
                    ));
                }
            }
        }
        // Symmetry: another pod's required anti-affinity that selects `p`.
        for (o, on) in others() {
            let terms = o
                .spec
                .as_ref()
                .and_then(|s| s.affinity.as_ref())
                .and_then(|a| a.pod_anti_affinity.as_ref())
                .and_then(|a| {
                    a.required_during_scheduling_ignored_during_execution
                        .clone()
                })
                .unwrap_or_default();
            for term in &terms {
                if term_selects(term, ns(o), p) && self.same_domain(node, on, &term.topology_key) {
                    out.push(format!(
                        "{name} on {node} shares {} with {:?} on {on}, whose anti-affinity forbids it",
                        term.topology_key, o.metadata.name
                    ));
                }
            }
        }
        let required = affinity
            .and_then(|a| a.pod_affinity.as_ref())
            .and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .clone()
            })
            .unwrap_or_default();
        for term in &required {
            let met = others().any(|(o, on)| {
                term_selects(term, ns(p), o) && self.same_domain(node, on, &term.topology_key)
            });
            // kube lets the first pod of a self-affine group go anywhere its node has the key
            // when no pod the term selects sits in any domain of the key (pods on nodes without
            // the key are not counted); in a final state that pod may be the only one, or every
            // other one must be with it.
            let self_ok = term_selects(term, ns(p), p)
                && self.domain(node, &term.topology_key).is_some()
                && !others().any(|(o, on)| {
                    term_selects(term, ns(p), o) && self.domain(on, &term.topology_key).is_some()
                });
            if !met && !self_ok {
                out.push(format!(
                    "{name} on {node} has no pod its affinity needs in its {}",
                    term.topology_key
                ));
            }
        }
        out.extend(self.port_conflicts(p, node));
        out
    }

    fn port_conflicts(&self, p: &Pod, node: &str) -> Vec<String> {
        let ports = |pod: &Pod| -> BTreeSet<(String, String, i32)> {
            pod.spec
                .iter()
                .flat_map(|s| s.containers.iter())
                .flat_map(|c| c.ports.iter().flatten())
                .filter_map(|cp| {
                    let hp = cp.host_port.filter(|h| *h > 0)?;
                    let ip = cp.host_ip.clone().unwrap_or_default();
                    let ip = if ip.is_empty() {
                        "0.0.0.0".to_string()
                    } else {
                        ip
                    };
                    Some((cp.protocol.clone().unwrap_or_else(|| "TCP".into()), ip, hp))
                })
                .collect()
        };
        let mine = ports(p);
        let name = p.metadata.name.as_deref().unwrap_or("");
        let mut out = Vec::new();
        for (o, on) in &self.pods {
            if *on != node || (o.metadata.name.as_deref() == Some(name) && ns(o) == ns(p)) {
                continue;
            }
            for (proto, ip, port) in ports(o) {
                let clash = mine.iter().any(|(mp, mi, mport)| {
                    *mport == port
                        && *mp == proto
                        && (mi == "0.0.0.0" || ip == "0.0.0.0" || *mi == ip)
                });
                if clash {
                    out.push(format!(
                        "{name} on {node} takes host port {port}/{proto} that {:?} holds",
                        o.metadata.name
                    ));
                }
            }
        }
        out
    }

    /// Each DoNotSchedule constraint of `p` (bound in the session on `node`): the skew of its
    /// domain over the least-loaded eligible domain, when every pod the selector counts that
    /// came in the session carries the same constraint (the generator makes sure).
    pub fn skew_broken(&self, p: &Pod, node: &str) -> Vec<String> {
        let mut out = Vec::new();
        for c in p
            .spec
            .as_ref()
            .and_then(|s| s.topology_spread_constraints.clone())
            .unwrap_or_default()
        {
            if c.when_unsatisfiable != "DoNotSchedule" {
                continue;
            }
            let Some(sel) = &c.label_selector else {
                continue;
            };
            let Some(mine) = self.domain(node, &c.topology_key) else {
                out.push(format!(
                    "{:?} on {node}, which has no {}",
                    p.metadata.name, c.topology_key
                ));
                continue;
            };
            let mut counts: BTreeMap<&str, i32> = BTreeMap::new();
            for n in self.nodes.keys() {
                if let Some(d) = self.domain(n, &c.topology_key) {
                    counts.entry(d).or_insert(0);
                }
            }
            for (o, on) in &self.pods {
                if ns(o) == ns(p)
                    && selects(sel, &labels_of_pod(o))
                    && let Some(d) = self.domain(on, &c.topology_key)
                {
                    *counts.entry(d).or_insert(0) += 1;
                }
            }
            let min = counts.values().copied().min().unwrap_or(0);
            let here = counts.get(mine).copied().unwrap_or(0);
            if here - min > c.max_skew {
                out.push(format!(
                    "{:?} on {node}: {} {mine} holds {here} matching pods, the least {min}, maxSkew {}",
                    p.metadata.name, c.topology_key, c.max_skew
                ));
            }
        }
        out
    }
}
