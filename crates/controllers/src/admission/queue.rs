//! Volcano's queue webhooks (`pkg/webhooks/admission/queues`): the defaults of a new queue, and
//! the rules of its quantities, state, hierarchy annotations and place in a queue tree.
//!
//! Messages are Volcano's. Where Volcano's checks miss a case, the case is refused here with a
//! message of ours: a cycle made by changing an existing queue's parent (Volcano walks the
//! stored parents and so misses the loop the change closes), and a child's sum compared only
//! on the resources its parent sets (Volcano counts an unset parent quantity as zero, so a
//! parent without `deserved` refuses any child that has one).

use std::collections::BTreeMap;

use serde_json::{Value, json};
use volcano_api::keys::{HIERARCHY, HIERARCHY_WEIGHTS, ROOT_QUEUE};
use volcano_api::quantity::{format_milli, parse_milli};
use volcano_api::scheduling::{Queue, queue_state};

use super::request::{AdmissionSettings, AdmissionView, Patch};

/// The defaults Volcano's mutating webhook gives a new queue: `reclaimable: true`, `weight: 1`
/// and a `root/` prefix on the hierarchy annotations.
pub fn default_queue(object: &Value) -> Patch {
    let mut patch = Patch::default();
    let annotations = object.pointer("/metadata/annotations");
    let hierarchy = annotations
        .and_then(|a| a.get(HIERARCHY))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let weights = annotations
        .and_then(|a| a.get(HIERARCHY_WEIGHTS))
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !hierarchy.is_empty() && !weights.is_empty() && !hierarchy.starts_with("root") {
        patch.add(
            &format!("/metadata/annotations/{}", escape(HIERARCHY)),
            json!(format!("root/{hierarchy}")),
        );
        patch.add(
            &format!("/metadata/annotations/{}", escape(HIERARCHY_WEIGHTS)),
            json!(format!("1/{weights}")),
        );
    }
    if object
        .pointer("/spec/reclaimable")
        .is_none_or(Value::is_null)
    {
        patch.add("/spec/reclaimable", json!(true));
    }
    let weight = object.pointer("/spec/weight").and_then(Value::as_i64);
    if weight.is_none_or(|w| w == 0) {
        patch.add("/spec/weight", json!(1));
    }
    patch
}

/// JSON pointer escaping of one path segment.
fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// Checks a queue being created (`old` is `None`) or updated.
pub fn validate_queue(
    queue: &Queue,
    old: Option<&Queue>,
    view: &dyn AdmissionView,
    settings: &AdmissionSettings,
) -> Result<(), String> {
    // Listed once: the tree rules below look queues up many times.
    let queues = Queues::of(view);
    let mut errors = Vec::new();
    quantity_errors(queue, &mut errors);
    state_errors(queue, &mut errors);
    hierarchy_annotation_errors(queue, &queues, &mut errors);
    if !errors.is_empty() {
        return Err(aggregate(&errors));
    }
    let name = queue.metadata.name.as_deref().unwrap_or_default();
    let parent_changed = old.is_none_or(|o| o.spec.parent != queue.spec.parent);
    if parent_changed {
        check_parent(queue, &queues, settings)?;
    }
    if let Some(old) = old
        && settings.enable_root_queue_protection
        && name == ROOT_QUEUE
        && !same_quotas(queue, old)
    {
        return Err(
            "root queue's resource attributes (capability, deserved, guarantee) cannot be modified"
                .to_string(),
        );
    }
    if name != ROOT_QUEUE && old.is_none_or(|o| parent_changed || !same_quotas(queue, o)) {
        check_tree_quotas(queue, &queues)?;
    }
    Ok(())
}

/// Go's `field.ErrorList.ToAggregate()` text: one error alone, several in brackets.
fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// A quantity list read into thousandths; an unreadable amount is left out (and reported by
/// [`quantity_errors`]).
type Amounts = BTreeMap<String, i64>;

fn amounts(list: Option<&volcano_api::scheduling::ResourceList>) -> Amounts {
    list.into_iter()
        .flatten()
        .filter_map(|(name, q)| parse_milli(&q.0).ok().map(|m| (name.clone(), m)))
        .collect()
}

fn guarantee(queue: &Queue) -> Amounts {
    amounts(
        queue
            .spec
            .guarantee
            .as_ref()
            .and_then(|g| g.resource.as_ref()),
    )
}

fn deserved(queue: &Queue) -> Amounts {
    amounts(queue.spec.deserved.as_ref())
}

fn capability(queue: &Queue) -> Amounts {
    amounts(queue.spec.capability.as_ref())
}

fn same_quotas(a: &Queue, b: &Queue) -> bool {
    capability(a) == capability(b) && deserved(a) == deserved(b) && guarantee(a) == guarantee(b)
}

/// Each quantity is a valid, non-negative amount; guarantee ≤ deserved ≤ capability.
fn quantity_errors(queue: &Queue, errors: &mut Vec<String>) {
    let spec = &queue.spec;
    let lists = [
        ("capability", spec.capability.as_ref()),
        ("deserved", spec.deserved.as_ref()),
        (
            "guarantee.resource",
            spec.guarantee.as_ref().and_then(|g| g.resource.as_ref()),
        ),
    ];
    for (path, list) in lists {
        for (name, q) in list.into_iter().flatten() {
            let at = format!("requestBody.spec.{path}.{name}");
            match parse_milli(&q.0) {
                Err(_) => errors.push(format!(
                    "{at}: Invalid value: {:?}: quantities must match the regular expression \
                     '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
                    q.0
                )),
                Ok(m) if m < 0 => errors.push(format!(
                    "{at}: Invalid value: {:?}: must be greater than or equal to 0",
                    q.0
                )),
                Ok(_) => {}
            }
        }
    }
    let raw = |list: Option<&volcano_api::scheduling::ResourceList>, name: &str| {
        list.and_then(|l| l.get(name)).map(|q| q.0.clone())
    };
    let deserved_amounts = deserved(queue);
    for (name, g) in guarantee(queue) {
        let g_text = raw(
            spec.guarantee.as_ref().and_then(|g| g.resource.as_ref()),
            &name,
        )
        .unwrap_or_default();
        match deserved_amounts.get(&name) {
            None => errors.push(format!(
                "requestBody.spec.deserved.{name}: Invalid value: \"<nil>\": \
                 deserved[{name}] must be >= guarantee[{name}]={g_text}"
            )),
            Some(d) if *d < g => {
                let d_text = raw(spec.deserved.as_ref(), &name).unwrap_or_default();
                errors.push(format!(
                    "requestBody.spec.deserved.{name}: Invalid value: {d_text:?}: \
                     deserved[{name}]={d_text} must be >= guarantee[{name}]={g_text}"
                ));
            }
            Some(_) => {}
        }
    }
    let capability_amounts = capability(queue);
    for (name, d) in &deserved_amounts {
        if let Some(c) = capability_amounts.get(name)
            && d > c
        {
            let d_text = raw(spec.deserved.as_ref(), name).unwrap_or_default();
            let c_text = raw(spec.capability.as_ref(), name).unwrap_or_default();
            errors.push(format!(
                "requestBody.spec.deserved.{name}: Invalid value: {d_text:?}: \
                 deserved[{name}]={d_text} must be <= capability[{name}]={c_text}"
            ));
        }
    }
}

fn state_errors(queue: &Queue, errors: &mut Vec<String>) {
    let state = queue
        .status
        .as_ref()
        .map(|s| s.state.as_str())
        .unwrap_or_default();
    if !state.is_empty() && state != queue_state::OPEN && state != queue_state::CLOSED {
        errors.push(format!(
            "requestBody.spec.state: Invalid value: {state:?}: queue state must be in [Open Closed]"
        ));
    }
}

/// The `volcano.sh/hierarchy` and `volcano.sh/hierarchy-weights` annotations of the `drf`
/// plugin's hierarchy: equal lengths, positive weights, and no queue already below this path.
fn hierarchy_annotation_errors(queue: &Queue, queues: &Queues, errors: &mut Vec<String>) {
    let annotation = |key: &str| {
        queue
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(key))
            .cloned()
            .unwrap_or_default()
    };
    let hierarchy = annotation(HIERARCHY);
    let weights = annotation(HIERARCHY_WEIGHTS);
    if hierarchy.is_empty() && weights.is_empty() {
        return;
    }
    let at = "requestBody.metadata.annotations";
    if hierarchy.split('/').count() != weights.split('/').count() {
        errors.push(format!(
            "{at}: Invalid value: {hierarchy:?}: {HIERARCHY} must have the same length with \
             {HIERARCHY_WEIGHTS}"
        ));
        return;
    }
    for weight in weights.split('/') {
        match weight.parse::<f64>() {
            Err(e) => {
                errors.push(format!(
                    "{at}: Invalid value: {weights:?}: {weight} in the {weights} is invalid number: \
                     strconv.ParseFloat: parsing {weight:?}: {e}"
                ));
                return;
            }
            Ok(w) if w <= 0.0 => {
                errors.push(format!(
                    "{at}: Invalid value: {weights:?}: {weight} in the {weights} must be larger than 0"
                ));
                return;
            }
            Ok(_) => {}
        }
    }
    let name = queue.metadata.name.as_deref().unwrap_or_default();
    let below = format!("{hierarchy}/");
    for other in queues.all.values() {
        let other_name = other.metadata.name.as_deref().unwrap_or_default();
        let other_path = other
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(HIERARCHY))
            .cloned()
            .unwrap_or_default();
        if other_name != name && other_path.starts_with(&below) {
            errors.push(format!(
                "{at}: Invalid value: {hierarchy:?}: {hierarchy} is not allowed to be in the sub \
                 path of {other_path} of queue {other_name}"
            ));
            return;
        }
    }
}

/// Lister's NotFound text, which Volcano prints.
pub(crate) fn not_found(name: &str) -> String {
    format!("queue.scheduling.volcano.sh \"{name}\" not found")
}

/// The parent a queue names; queues without one are `root`'s children.
fn parent_of(q: &Queue) -> &str {
    let name = q.metadata.name.as_deref().unwrap_or_default();
    if q.spec.parent.is_empty() && name != ROOT_QUEUE {
        ROOT_QUEUE
    } else {
        q.spec.parent.as_str()
    }
}

fn is_child_of(q: &Queue, parent: &str) -> bool {
    parent_of(q) == parent && q.metadata.name.as_deref() != Some(parent)
}

/// The queues naming `parent` as theirs.
pub(crate) fn children_of(view: &dyn AdmissionView, parent: &str) -> Vec<Queue> {
    view.queues()
        .into_iter()
        .filter(|q| is_child_of(q, parent))
        .collect()
}

/// Every queue, listed once for one review, with its children by parent.
struct Queues {
    all: BTreeMap<String, Queue>,
    children: BTreeMap<String, Vec<String>>,
}

impl Queues {
    fn of(view: &dyn AdmissionView) -> Self {
        let all: BTreeMap<String, Queue> = view
            .queues()
            .into_iter()
            .map(|q| (q.metadata.name.clone().unwrap_or_default(), q))
            .collect();
        let mut children: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (name, q) in &all {
            if is_child_of(q, parent_of(q)) {
                children
                    .entry(parent_of(q).to_string())
                    .or_default()
                    .push(name.clone());
            }
        }
        Queues { all, children }
    }

    fn get(&self, name: &str) -> Option<&Queue> {
        self.all.get(name)
    }

    fn children(&self, parent: &str) -> Vec<&Queue> {
        self.children
            .get(parent)
            .into_iter()
            .flatten()
            .filter_map(|n| self.all.get(n))
            .collect()
    }
}

fn allocated_pods(queue: &Queue) -> i64 {
    queue
        .status
        .as_ref()
        .and_then(|s| s.allocated.as_ref())
        .and_then(|a| a.get("pods"))
        .and_then(|q| parse_milli(&q.0).ok())
        .map_or(0, |m| m / 1000)
}

/// The parent exists, is not the queue itself nor below it, the tree is not too deep, and a
/// parent that has no children yet runs no pods of its own.
fn check_parent(
    queue: &Queue,
    queues: &Queues,
    settings: &AdmissionSettings,
) -> Result<(), String> {
    let name = queue.metadata.name.as_deref().unwrap_or_default();
    let parent = queue.spec.parent.as_str();
    if parent.is_empty() || parent == ROOT_QUEUE {
        return Ok(());
    }
    if parent == name {
        return Err(format!("queue {name} cannot use itself as parent"));
    }
    let mut depth = 1;
    let mut path = vec![name.to_string()];
    let mut next = parent.to_string();
    while !next.is_empty() && next != ROOT_QUEUE {
        depth += 1;
        if next == name {
            path.push(next);
            return Err(format!(
                "queue {name} cannot have {parent} as parent: the parents would form a cycle {}",
                path.join(" -> ")
            ));
        }
        if depth > settings.max_queue_depth {
            return Err(format!(
                "queue {name} exceeds the maximum allowed depth of {}",
                settings.max_queue_depth
            ));
        }
        let Some(p) = queues.get(&next) else {
            return Err(format!(
                "failed to get parent queue {next} of queue {name}: {}",
                not_found(&next)
            ));
        };
        path.push(next);
        next = p.spec.parent.clone();
    }
    let Some(parent_queue) = queues.get(parent) else {
        return Err(format!(
            "failed to get parent queue of queue {name}: {}",
            not_found(parent)
        ));
    };
    if queues.children(parent).is_empty() {
        let pods = allocated_pods(parent_queue);
        if pods != 0 {
            return Err(format!(
                "queue {parent} cannot be the parent queue of queue {name} because it has \
                 allocated Pods: {pods}"
            ));
        }
    }
    Ok(())
}

/// How Volcano prints an amount in its tree messages: cpu in cores, memory in bytes, others
/// as numbers with two decimals.
fn shown(resource: &str, milli: i64) -> String {
    match resource {
        "cpu" => format_milli(milli),
        "memory" => (milli / 1000).to_string(),
        _ => format!("{:.2}", milli as f64 / 1000.0),
    }
}

/// A queue's capability within its nearest capped ancestor's, its and its siblings' guarantees
/// and deserved within its parent's, and its children's within its own.
fn check_tree_quotas(queue: &Queue, queues: &Queues) -> Result<(), String> {
    let name = queue.metadata.name.as_deref().unwrap_or_default();
    let parent = queue.spec.parent.as_str();
    if !parent.is_empty() && parent != ROOT_QUEUE {
        let Some(parent_queue) = queues.get(parent) else {
            return Err(format!(
                "parent queue {parent} not found: {}",
                not_found(parent)
            ));
        };
        for (resource, mine) in capability(queue) {
            if let Some(limit) = ancestor_capability(queue, &resource, queues)
                && mine > limit
            {
                return Err(format!(
                    "queue {name} capability[{resource}]={} exceeds its ancestor's capability={}",
                    shown(&resource, mine),
                    shown(&resource, limit)
                ));
            }
        }
        let siblings: Vec<&Queue> = queues
            .children(parent)
            .into_iter()
            .filter(|q| q.metadata.name.as_deref() != Some(name))
            .chain(std::iter::once(queue))
            .collect();
        check_children_sums(parent_queue, &siblings, "parent queue")?;
    }
    let children = queues.children(name);
    if children.is_empty() {
        return Ok(());
    }
    for (resource, limit) in capability(queue) {
        let widest = children
            .iter()
            .map(|c| subtree_capability(c, &resource, queues, 0))
            .max()
            .unwrap_or(0);
        if limit < widest {
            return Err(format!(
                "queue {name} capability[{resource}]={} is smaller than its descendants' max \
                 capability={}",
                shown(&resource, limit),
                shown(&resource, widest)
            ));
        }
    }
    check_children_sums(queue, &children, "queue")
}

/// The children's guarantees and deserved, summed, within the parent's on each resource the
/// parent sets.
fn check_children_sums(parent: &Queue, children: &[&Queue], who: &str) -> Result<(), String> {
    let parent_name = parent.metadata.name.as_deref().unwrap_or_default();
    for (what, of) in [
        ("guarantee", guarantee as fn(&Queue) -> Amounts),
        ("deserved", deserved),
    ] {
        let limits = of(parent);
        let mut total = Amounts::new();
        for child in children {
            for (r, v) in of(child) {
                *total.entry(r).or_default() += v;
            }
        }
        if total
            .iter()
            .any(|(r, v)| limits.get(r).is_some_and(|limit| v > limit))
        {
            return Err(format!(
                "{who} {parent_name} validation failed: sum of children's {what} ({}) exceeds \
                 parent's {what} limit ({})",
                listed(&total),
                listed(&limits)
            ));
        }
    }
    Ok(())
}

fn listed(amounts: &Amounts) -> String {
    amounts
        .iter()
        .map(|(r, v)| format!("{r} {}", shown(r, *v)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The capability of the nearest ancestor (below root) that caps `resource`.
fn ancestor_capability(queue: &Queue, resource: &str, queues: &Queues) -> Option<i64> {
    let mut next = queue.spec.parent.clone();
    let mut seen = 0;
    while !next.is_empty() && next != ROOT_QUEUE && seen < 64 {
        seen += 1;
        let p = queues.get(&next)?;
        if let Some(v) = capability(p).get(resource).filter(|v| **v > 0) {
            return Some(*v);
        }
        next = p.spec.parent.clone();
    }
    None
}

/// The widest capability of `resource` set in the subtree of `queue`: its own if set, else the
/// widest of its children's subtrees.
fn subtree_capability(queue: &Queue, resource: &str, queues: &Queues, depth: u32) -> i64 {
    if let Some(v) = capability(queue).get(resource).filter(|v| **v > 0) {
        return *v;
    }
    if depth > 64 {
        return 0;
    }
    let name = queue.metadata.name.as_deref().unwrap_or_default();
    queues
        .children(name)
        .into_iter()
        .map(|c| subtree_capability(c, resource, queues, depth + 1))
        .max()
        .unwrap_or(0)
}
