//! The writes of the store: create, update, patch, delete, and the pod subresources that write
//! (binding, eviction).

use std::sync::Arc;

use serde_json::{Value, json};

use super::convert;
use super::defaults::{self, Priorities};
use super::meta::{self, ensure_object, meta_mut, meta_str};
use super::patch::{self, PatchError, PatchType};
use super::{DeleteOptions, Part, Preconditions, Selectors, Store, WriteOptions, graceful, scope};
use super::{schema_check, validate};
use crate::error::{ApiError, Details, FieldError, Reason};
use crate::kinds::{self, KindInfo};
use crate::time::format_rfc3339;

/// Metadata fields only the server sets; a client's values are replaced on create.
const SERVER_META: &[&str] = &[
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "managedFields",
    "selfLink",
];

/// Checks or fills in `apiVersion` and `kind` of a request body.
fn check_type(kind: &KindInfo, object: &mut Value) -> Result<(), ApiError> {
    let Some(map) = object.as_object_mut() else {
        return Err(ApiError::bad_request(
            "the body of the request was in an unknown format: expected a JSON object",
        ));
    };
    let expected = kind.api_version();
    match map.get("apiVersion").and_then(Value::as_str) {
        Some(v) if !v.is_empty() && v != expected => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version ({expected})"
            )));
        }
        _ => {}
    }
    match map.get("kind").and_then(Value::as_str) {
        Some(k) if !k.is_empty() && k != kind.kind => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({})",
                kind.kind
            )));
        }
        _ => {}
    }
    map.insert("apiVersion".into(), json!(expected));
    map.insert("kind".into(), json!(kind.kind));
    Ok(())
}

/// Resolves the namespace of a written object: the request's wins, a different one in the body
/// is an error, a namespaced object gets `default` when neither says.
fn resolve_namespace(
    kind: &KindInfo,
    ns: Option<&str>,
    object: &mut Value,
) -> Result<String, ApiError> {
    let body_ns = meta_str(object, "namespace").to_string();
    if !kind.namespaced {
        meta_mut(object).remove("namespace");
        return Ok(String::new());
    }
    let ns = match ns {
        Some(ns) if !body_ns.is_empty() && body_ns != ns => {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        Some(ns) => ns.to_string(),
        None if body_ns.is_empty() => "default".to_string(),
        None => body_ns,
    };
    meta_mut(object).insert("namespace".into(), json!(ns));
    Ok(ns)
}

/// Copies what a client may not change on update from the stored object.
fn keep_server_meta(old: &Value, new: &mut Value) {
    let m = meta_mut(new);
    for field in SERVER_META {
        match old.pointer(&format!("/metadata/{field}")) {
            Some(v) => {
                m.insert((*field).to_string(), v.clone());
            }
            None => {
                m.remove(*field);
            }
        }
    }
}

/// Sets `status` of `to` to that of `from` (or removes it).
fn copy_status(from: &Value, to: &mut Value) {
    let root = ensure_object(to);
    match from.get("status") {
        Some(s) => {
            root.insert("status".into(), s.clone());
        }
        None => {
            root.remove("status");
        }
    }
}

fn patch_error(kind: &KindInfo, name: &str, e: PatchError) -> ApiError {
    match e {
        PatchError::Malformed(_) => ApiError::bad_request(e.to_string()),
        PatchError::Failed(why) => ApiError::invalid(kind, name, &why),
    }
}

impl Store {
    /// Creates an object. `ns` is the namespace of the request (None: the body's, or
    /// `default`). Returns the stored object.
    pub fn create(
        &mut self,
        kind: &'static KindInfo,
        ns: Option<&str>,
        mut object: Value,
        w: &WriteOptions,
    ) -> Result<Arc<Value>, ApiError> {
        check_type(kind, &mut object)?;
        let mut object = convert::to_storage(kind, object);
        let ns = resolve_namespace(kind, ns, &mut object)?;
        let mut name = meta_str(&object, "name").to_string();
        if name.is_empty() {
            let prefix = meta_str(&object, "generateName").to_string();
            if prefix.is_empty() {
                return Err(ApiError::invalid_fields(
                    kind,
                    "",
                    vec![FieldError::required(
                        "metadata.name",
                        "name or generateName is required",
                    )],
                ));
            }
            // Retry on the rare collision, as the real server's clients do.
            name = format!("{prefix}{}", self.ids.suffix());
            while self.objects[convert::storage(kind).index()]
                .contains_key(&(ns.clone(), name.clone()))
            {
                name = format!("{prefix}{}", self.ids.suffix());
            }
            meta_mut(&mut object).insert("name".into(), json!(name));
        }
        meta::validate_name(kind, &name)?;
        if kind.namespaced && !self.namespace_exists(&ns) {
            return Err(ApiError::not_found(kinds::namespaces(), &ns));
        }
        let key = (ns, name.clone());
        if self.objects[convert::storage(kind).index()].contains_key(&key) {
            return Err(ApiError::already_exists(kind, &name));
        }
        let priority_lookup = |class: &str| self.priority_class(class);
        let priorities = Priorities {
            lookup: &priority_lookup,
            global_default: self.global_default_priority(),
        };
        defaults::on_create(kind, &mut object, &priorities)?;
        if kind.group.is_empty() && kind.resource == "pods" {
            validate::pod(kind, &object)?;
        }
        schema_check::custom_resource(kind, &object)?;
        self.admit_create(kind, &mut object)?;
        let m = meta_mut(&mut object);
        for field in SERVER_META {
            m.remove(*field);
        }
        m.insert("uid".into(), json!(self.ids.uid()));
        m.insert("creationTimestamp".into(), json!(format_rfc3339(w.now)));
        m.insert("generation".into(), json!(1));
        if w.dry_run {
            return Ok(convert::to_view(kind, &Arc::new(object)));
        }
        let rv = self.next_rv();
        meta_mut(&mut object).insert("resourceVersion".into(), json!(rv.to_string()));
        let made = self.commit(kind, key.clone(), object, super::ChangeType::Added, None);
        let view = convert::to_view(kind, &made);
        self.collect_if_orphaned(kind, key, made);
        Ok(view)
    }

    /// Deletes an object created with owners none of which exists any more, as Kubernetes'
    /// garbage collector does moments later: a controller acting on a stale view (a Job
    /// deleted right after it was created) must not leave pods and PodGroups behind.
    fn collect_if_orphaned(&mut self, kind: &'static KindInfo, key: super::Key, made: Arc<Value>) {
        let owners = meta::owner_uids(&made);
        if owners.is_empty()
            || owners
                .iter()
                .any(|o| o.is_empty() || self.uids.contains_key(o))
        {
            return;
        }
        // Just made, it owns nothing yet, so nothing else goes with it.
        self.remove(kind, key, made);
    }

    /// Replaces an object (`PUT`), or its status (`part` Status).
    pub fn update(
        &mut self,
        kind: &'static KindInfo,
        ns: Option<&str>,
        name: &str,
        mut object: Value,
        part: Part,
        w: &WriteOptions,
    ) -> Result<Arc<Value>, ApiError> {
        check_type(kind, &mut object)?;
        let body_name = meta_str(&object, "name");
        if !body_name.is_empty() && body_name != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        // Without a namespace in the request, the body's (or `default`) is the object's.
        let resolved = resolve_namespace(kind, ns, &mut object)?;
        let ns = Some(resolved.as_str());
        let object = convert::to_storage(kind, object);
        let old = self.stored(kind, ns, name)?;
        let rv = meta_str(&object, "resourceVersion");
        if !rv.is_empty() && rv != meta_str(&old, "resourceVersion") {
            return Err(ApiError::stale(kind, name));
        }
        let uid = meta_str(&object, "uid");
        if !uid.is_empty() && uid != meta_str(&old, "uid") {
            let why = format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                meta_str(&old, "uid")
            );
            return Err(ApiError::conflict(kind, name, &why));
        }
        self.replace(kind, ns, name, old, object, part, w)
    }

    /// Applies a patch to an object or its status. A server-side apply of a missing object
    /// creates it.
    #[allow(clippy::too_many_arguments)] // One argument per part of a PATCH request.
    pub fn patch(
        &mut self,
        kind: &'static KindInfo,
        ns: Option<&str>,
        name: &str,
        patch_type: PatchType,
        patch_body: &Value,
        part: Part,
        w: &WriteOptions,
    ) -> Result<Arc<Value>, ApiError> {
        let old = match self.stored(kind, ns, name) {
            Ok(old) => old,
            Err(e) if e.is_not_found() && patch_type == PatchType::Apply && part == Part::Main => {
                let mut object = json!({});
                patch::apply(patch_type, &mut object, patch_body)
                    .map_err(|e| patch_error(kind, name, e))?;
                meta_mut(&mut object).insert("name".into(), json!(name));
                return self.create(kind, ns, object, w);
            }
            Err(e) => return Err(e),
        };
        let mut object = (*old).clone();
        patch::apply(patch_type, &mut object, patch_body)
            .map_err(|e| patch_error(kind, name, e))?;
        if !object.is_object() {
            return Err(ApiError::bad_request("a patch must leave an object"));
        }
        let rv = meta_str(&object, "resourceVersion");
        if !rv.is_empty() && rv != meta_str(&old, "resourceVersion") {
            return Err(ApiError::stale(kind, name));
        }
        // The identity of an object cannot be patched.
        ensure_object(&mut object).insert("apiVersion".into(), json!(kind.api_version()));
        ensure_object(&mut object).insert("kind".into(), json!(kind.kind));
        let m = meta_mut(&mut object);
        m.insert("name".into(), json!(name));
        if kind.namespaced {
            m.insert("namespace".into(), json!(meta_str(&old, "namespace")));
        }
        let object = convert::to_storage(kind, object);
        self.replace(kind, ns, name, old, object, part, w)
    }

    /// The common end of update and patch: `new` replaces `old` within the allowed part.
    #[allow(clippy::too_many_arguments)] // Internal; mirrors the public write's arguments.
    fn replace(
        &mut self,
        kind: &'static KindInfo,
        ns: Option<&str>,
        name: &str,
        old: Arc<Value>,
        mut new: Value,
        part: Part,
        w: &WriteOptions,
    ) -> Result<Arc<Value>, ApiError> {
        schema_check::custom_resource(kind, &new)?;
        match part {
            Part::Status => {
                let mut only_status = (*old).clone();
                copy_status(&new, &mut only_status);
                new = only_status;
            }
            Part::Main => {
                self.admit_update(kind, &old, &mut new)?;
                keep_server_meta(&old, &mut new);
                if kind.status_subresource {
                    copy_status(&old, &mut new);
                }
                if new.get("spec") != old.get("spec") {
                    let generation = old
                        .pointer("/metadata/generation")
                        .and_then(Value::as_i64)
                        .unwrap_or(0);
                    meta_mut(&mut new).insert("generation".into(), json!(generation + 1));
                }
            }
        }
        self.write(kind, ns, name, old, new, w)
    }

    /// Stores `new` in place of `old` with a new resourceVersion.
    pub(super) fn write(
        &mut self,
        kind: &'static KindInfo,
        ns: Option<&str>,
        name: &str,
        old: Arc<Value>,
        mut new: Value,
        w: &WriteOptions,
    ) -> Result<Arc<Value>, ApiError> {
        if w.dry_run {
            return Ok(convert::to_view(kind, &Arc::new(new)));
        }
        // A write that changes nothing is not a write: no new resourceVersion, no event.
        if new == *old {
            return Ok(convert::to_view(kind, &old));
        }
        let rv = self.next_rv();
        meta_mut(&mut new).insert("resourceVersion".into(), json!(rv.to_string()));
        let key = (scope(kind, ns), name.to_string());
        let new = self.commit(kind, key, new, super::ChangeType::Modified, Some(old));
        Ok(convert::to_view(kind, &new))
    }

    /// Deletes an object and, recursively, what it owns and (for a namespace) what it holds.
    /// A pod bound to a node and still running is only marked for deletion, until its kubelet
    /// confirms (see [`DeleteOptions`]). Returns the object's last (or marked) state.
    pub fn delete(
        &mut self,
        kind: &'static KindInfo,
        ns: Option<&str>,
        name: &str,
        opts: &DeleteOptions,
        w: &WriteOptions,
    ) -> Result<Arc<Value>, ApiError> {
        let old = self.stored(kind, ns, name)?;
        check_preconditions(kind, name, &old, &opts.preconditions)?;
        if let Some(grace) = graceful::grace_period(kind, &old, opts.grace_period_seconds) {
            return self.mark_deleted(kind, ns, name, old, grace, w);
        }
        self.admit_delete(kind, &old)?;
        if w.dry_run {
            return Ok(convert::to_view(kind, &old));
        }
        if kind.resource == "namespaces" && kind.group.is_empty() {
            self.empty_namespace(name, w);
        }
        let last = self.remove(kind, (scope(kind, ns), name.to_string()), old);
        self.collect_garbage(&last, w);
        Ok(convert::to_view(kind, &last))
    }
}

/// Refuses a delete whose preconditions the stored object does not meet.
fn check_preconditions(
    kind: &KindInfo,
    name: &str,
    old: &Value,
    pre: &Preconditions,
) -> Result<(), ApiError> {
    let checks = [
        ("UID", pre.uid.as_deref(), meta_str(old, "uid")),
        (
            "ResourceVersion",
            pre.resource_version.as_deref(),
            meta_str(old, "resourceVersion"),
        ),
    ];
    for (what, want, have) in checks {
        if let Some(want) = want.filter(|w| *w != have) {
            let why = format!(
                "Precondition failed: {what} in precondition: {want}, {what} in object meta: {have}"
            );
            return Err(ApiError::conflict(kind, name, &why));
        }
    }
    Ok(())
}

impl Store {
    /// Deletes every selected object of a kind in one namespace or all.
    pub fn delete_collection(
        &mut self,
        kind: &'static KindInfo,
        ns: Option<&str>,
        selectors: &Selectors,
        w: &WriteOptions,
    ) -> Result<Vec<Arc<Value>>, ApiError> {
        let (items, _) = self.list(kind, ns, selectors);
        let mut deleted = Vec::new();
        for item in items {
            let (ns, name) = (meta_str(&item, "namespace"), meta_str(&item, "name"));
            match self.delete(kind, Some(ns), name, &DeleteOptions::default(), w) {
                Ok(last) => deleted.push(last),
                // Already collected as the dependent of an earlier item.
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(e),
            }
        }
        Ok(deleted)
    }

    /// Removes one stored object, recording its last state with a new resourceVersion.
    fn remove(&mut self, kind: &'static KindInfo, key: super::Key, old: Arc<Value>) -> Arc<Value> {
        let mut last = (*old).clone();
        let rv = self.next_rv();
        meta_mut(&mut last).insert("resourceVersion".into(), json!(rv.to_string()));
        self.commit(kind, key, last, super::ChangeType::Deleted, Some(old))
    }

    /// Deletes everything in a namespace, as the namespace controller would.
    fn empty_namespace(&mut self, ns: &str, w: &WriteOptions) {
        for kind in kinds::KINDS
            .iter()
            .filter(|k| k.namespaced && !convert::is_view(k))
        {
            let (items, _) = self.list(kind, Some(ns), &Selectors::default());
            for item in items {
                let key = (ns.to_string(), meta_str(&item, "name").to_string());
                // A dependent deleted earlier in this loop is gone already.
                if let Some(current) = self.objects[convert::storage(kind).index()]
                    .get(&key)
                    .cloned()
                {
                    let last = self.remove(kind, key, current);
                    self.collect_garbage(&last, w);
                }
            }
        }
    }

    /// Deletes the dependents of a deleted object whose owners are now all gone, recursively.
    /// A bound, running pod among them is deleted gracefully, as the garbage collector's
    /// delete is: it goes when its kubelet confirms.
    fn collect_garbage(&mut self, deleted: &Value, w: &WriteOptions) {
        let mut queue = vec![meta_str(deleted, "uid").to_string()];
        while let Some(uid) = queue.pop() {
            let Some(dependents) = self.dependents.get(&uid).cloned() else {
                continue;
            };
            for (idx, key) in dependents {
                let Some(object) = self.objects[idx].get(&key).cloned() else {
                    continue;
                };
                // Kubernetes keeps a dependent while any of its owners exists.
                if meta::owner_uids(&object)
                    .iter()
                    .any(|o| self.uids.contains_key(o))
                {
                    continue;
                }
                let kind = &kinds::KINDS[idx];
                if let Some(grace) = graceful::grace_period(kind, &object, None) {
                    let (ns, name) = (key.0.clone(), key.1.clone());
                    // Marking a stored object for deletion cannot fail; if it did, the pod
                    // would simply stay, as with a garbage collector that has not got to it.
                    let _ = self.mark_deleted(kind, Some(&ns), &name, object, grace, w);
                    continue;
                }
                let last = self.remove(kind, key, object);
                queue.push(meta_str(&last, "uid").to_string());
            }
        }
    }

    /// Binds a pod to a node (`pods/{name}/binding`), as the scheduler does.
    pub fn bind(
        &mut self,
        ns: &str,
        name: &str,
        binding: &Value,
        w: &WriteOptions,
    ) -> Result<Arc<Value>, ApiError> {
        let pods = kinds::pods();
        let node = binding
            .pointer("/target/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let target_kind = binding.pointer("/target/kind").and_then(Value::as_str);
        if node.is_empty() || target_kind.is_some_and(|k| !k.is_empty() && k != "Node") {
            return Err(ApiError::invalid_fields(
                pods,
                name,
                vec![FieldError::invalid(
                    "target",
                    binding.get("target").cloned().unwrap_or(Value::Null),
                    "a binding must target a Node by name",
                )],
            ));
        }
        let old = self.stored(pods, Some(ns), name)?;
        // The binding's uid and resourceVersion, where given, must be the pod's: a pod made
        // again under the name is not the one the scheduler decided on.
        let given = |field: &str| {
            binding
                .pointer(&format!("/metadata/{field}"))
                .and_then(Value::as_str)
                .filter(|v| !v.is_empty())
                .map(str::to_string)
        };
        let pre = Preconditions {
            uid: given("uid"),
            resource_version: given("resourceVersion"),
        };
        check_preconditions(pods, name, &old, &pre)?;
        let bound = old
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !bound.is_empty() {
            return Err(ApiError {
                reason: Reason::Conflict,
                message: format!(
                    "Operation cannot be fulfilled on pods/binding \"{name}\": pod {name} is already assigned to node \"{bound}\""
                ),
                details: Some(Box::new(Details {
                    name: name.to_string(),
                    group: String::new(),
                    kind: "pods/binding".to_string(),
                    causes: Vec::new(),
                })),
            });
        }
        let mut pod = (*old).clone();
        ensure_object(ensure_object(&mut pod).entry("spec").or_insert(Value::Null))
            .insert("nodeName".into(), json!(node));
        // The binding's annotations are copied onto the pod, as in Kubernetes.
        if let Some(Value::Object(annotations)) = binding.pointer("/metadata/annotations") {
            let target = ensure_object(
                meta_mut(&mut pod)
                    .entry("annotations")
                    .or_insert(Value::Null),
            );
            for (k, v) in annotations {
                target.insert(k.clone(), v.clone());
            }
        }
        let status = ensure_object(
            ensure_object(&mut pod)
                .entry("status")
                .or_insert(Value::Null),
        );
        let conditions = status.entry("conditions").or_insert(json!([]));
        if let Some(list) = conditions.as_array_mut() {
            list.retain(|c| c.get("type").and_then(Value::as_str) != Some("PodScheduled"));
            list.push(json!({
                "type": "PodScheduled",
                "status": "True",
                "lastProbeTime": null,
                "lastTransitionTime": format_rfc3339(w.now),
            }));
        }
        self.write(pods, Some(ns), name, old, pod, w)
    }

    /// Evicts a pod (`pods/{name}/eviction`): deletes it, gracefully as a delete would. There
    /// are no disruption budgets.
    pub fn evict(
        &mut self,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
        w: &WriteOptions,
    ) -> Result<(), ApiError> {
        self.delete(kinds::pods(), Some(ns), name, opts, w)
            .map(|_| ())
    }

    /// Value of a PriorityClass by name.
    fn priority_class(&self, name: &str) -> Option<i64> {
        let pc = kinds::find("priorityclasses")?;
        self.get(pc, None, name)
            .ok()
            .and_then(|o| o.get("value").and_then(Value::as_i64))
    }

    /// The PriorityClass marked `globalDefault`, if any.
    fn global_default_priority(&self) -> Option<(String, i64)> {
        let pc = kinds::find("priorityclasses")?;
        self.objects[pc.index()].values().find_map(|o| {
            (o.get("globalDefault").and_then(Value::as_bool) == Some(true)).then(|| {
                let value = o.get("value").and_then(Value::as_i64).unwrap_or(0);
                (meta_str(o, "name").to_string(), value)
            })
        })
    }
}
