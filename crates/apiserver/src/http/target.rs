//! What a resource request names: its path parsed into a [`Target`] (kind, namespace, name,
//! subresource) and its query [`Params`]. Below `resource`, `watch` and `faults`, which all
//! serve a target.
//!
//! Paths are parsed here rather than by the router, because Kubernetes paths are ambiguous to a
//! pattern router (`/api/v1/namespaces/x/status` is a namespace's status,
//! `/api/v1/namespaces/x/pods` a list of pods).

use std::collections::HashMap;

use crate::error::ApiError;
use crate::kinds::{self, KindInfo};

/// What a resource path names.
#[derive(Debug)]
pub struct Target {
    /// The kind.
    pub kind: &'static KindInfo,
    /// The namespace, for namespaced paths.
    pub ns: Option<String>,
    /// The object, if the path names one.
    pub name: Option<String>,
    /// The subresource (`status`, `binding`, `eviction`).
    pub sub: Option<String>,
}

/// Parses the part of a resource path after the group-version.
pub fn parse_target(group: &str, version: &str, rest: &str) -> Result<Target, ApiError> {
    let segs: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    let owned = |s: Option<&&str>| s.map(|s| s.to_string());
    let namespaced_form = segs.len() >= 3
        && segs[0] == "namespaces"
        && !(segs.len() == 3 && matches!(segs[2], "status" | "finalize"));
    let target = if namespaced_form {
        if segs.len() > 5 {
            return Err(ApiError::no_route());
        }
        let kind = kinds::lookup(group, version, segs[2]).ok_or_else(ApiError::no_route)?;
        if !kind.namespaced {
            return Err(ApiError::no_route());
        }
        Target {
            kind,
            ns: owned(segs.get(1)),
            name: owned(segs.get(3)),
            sub: owned(segs.get(4)),
        }
    } else {
        let first = segs.first().ok_or_else(ApiError::no_route)?;
        if segs.len() > 3 {
            return Err(ApiError::no_route());
        }
        let kind = kinds::lookup(group, version, first).ok_or_else(ApiError::no_route)?;
        if kind.namespaced && segs.len() > 1 {
            return Err(ApiError::no_route());
        }
        Target {
            kind,
            ns: None,
            name: owned(segs.get(1)),
            sub: owned(segs.get(2)),
        }
    };
    match (target.sub.as_deref(), target.kind.resource) {
        (None, _) => {}
        (Some("status"), _) if target.kind.status_subresource => {}
        (Some("binding" | "eviction"), "pods") if target.kind.group.is_empty() => {}
        (Some(sub), "pods") if target.kind.group.is_empty() && STREAMS.contains(&sub) => {}
        _ => return Err(ApiError::no_route()),
    }
    Ok(target)
}

/// The pod subresources that stream from a running container, which no simulated pod has.
pub(super) const STREAMS: &[&str] = &["log", "exec", "attach", "portforward"];

/// Query parameters, decoded.
pub type Params = HashMap<String, String>;

#[cfg(test)]
mod tests {
    use super::*;

    type Parsed = (String, Option<String>, Option<String>, Option<String>);

    fn parse(group: &str, rest: &str) -> Option<Parsed> {
        let version = if group.is_empty() {
            "v1"
        } else {
            kinds::groups().iter().find(|g| g.0 == group)?.1
        };
        let t = parse_target(group, version, rest).ok()?;
        Some((t.kind.resource.to_string(), t.ns, t.name, t.sub))
    }

    #[test]
    fn paths_resolve_like_kubernetes() {
        let s = |x: &str| Some(x.to_string());
        assert_eq!(parse("", "pods"), Some(("pods".into(), None, None, None)));
        assert_eq!(
            parse("", "namespaces/default/pods/p/binding"),
            Some(("pods".into(), s("default"), s("p"), s("binding")))
        );
        assert_eq!(
            parse("", "namespaces/default"),
            Some(("namespaces".into(), None, s("default"), None))
        );
        assert_eq!(
            parse("", "namespaces/default/status"),
            Some(("namespaces".into(), None, s("default"), s("status")))
        );
        assert_eq!(
            parse("scheduling.volcano.sh", "queues/q/status"),
            Some(("queues".into(), None, s("q"), s("status")))
        );
        assert_eq!(
            parse("", "pods/p"),
            None,
            "a namespaced object needs its namespace"
        );
        assert_eq!(parse("", "namespaces/default/configmaps/c/status"), None);
        assert_eq!(
            parse("", "namespaces/default/pods/p/log"),
            Some(("pods".into(), s("default"), s("p"), s("log")))
        );
        assert_eq!(parse("", "namespaces/default/configmaps/c/log"), None);
        assert_eq!(parse("", "namespaces/default/deployments"), None);
        assert_eq!(parse("scheduling.volcano.sh", "namespaces/x/queues"), None);
    }
}
