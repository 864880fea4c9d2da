//! Label and field selectors, as in `?labelSelector=` and `?fieldSelector=`.
//!
//! Label selectors take every form Kubernetes accepts (`a=b`, `a==b`, `a!=b`, `a in (x,y)`,
//! `a notin (x)`, `a`, `!a`, `a>1`, `a<1`). Field selectors take `=`, `==` and `!=` on any dotted
//! path of the object (`metadata.name`, `spec.nodeName`, `status.phase`,
//! `involvedObject.name`...); a missing field reads as the empty string, so
//! `spec.nodeName=` selects unbound pods as in Kubernetes. Kubernetes refuses paths a kind does
//! not index; this server accepts them all, which is more permissive but never wrong for a path
//! Kubernetes accepts.

use serde_json::Value;

use crate::error::ApiError;

#[derive(Debug, Clone, PartialEq)]
enum Op {
    Eq,
    NotEq,
    In,
    NotIn,
    Exists,
    DoesNotExist,
    Gt,
    Lt,
}

#[derive(Debug, Clone, PartialEq)]
struct Requirement {
    key: String,
    op: Op,
    values: Vec<String>,
}

/// A parsed label selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

/// Splits at commas that are not inside parentheses.
fn split_top_level(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
}

fn parse_requirement(part: &str) -> Result<Requirement, String> {
    let req = |key: &str, op, values: Vec<String>| {
        let key = key.trim();
        if valid_key(key) {
            Ok(Requirement {
                key: key.to_string(),
                op,
                values,
            })
        } else {
            Err(format!("invalid label key \"{key}\""))
        }
    };
    if let Some(key) = part.strip_prefix('!') {
        return req(key, Op::DoesNotExist, Vec::new());
    }
    if let Some(open) = part.find('(') {
        let close = part
            .rfind(')')
            .filter(|c| *c > open && part[c + 1..].trim().is_empty())
            .ok_or_else(|| "unbalanced parentheses".to_string())?;
        let values = part[open + 1..close]
            .split(',')
            .map(|v| v.trim().to_string())
            .collect();
        let head: Vec<&str> = part[..open].split_whitespace().collect();
        return match head.as_slice() {
            [key, "in"] => req(key, Op::In, values),
            [key, "notin"] => req(key, Op::NotIn, values),
            _ => Err("expected `key in (...)` or `key notin (...)`".to_string()),
        };
    }
    for (token, op) in [
        ("!=", Op::NotEq),
        ("==", Op::Eq),
        ("=", Op::Eq),
        (">", Op::Gt),
        ("<", Op::Lt),
    ] {
        if let Some((key, value)) = part.split_once(token) {
            return req(key, op, vec![value.trim().to_string()]);
        }
    }
    req(part, Op::Exists, Vec::new())
}

impl LabelSelector {
    /// Parses the `labelSelector` query parameter.
    pub fn parse(s: &str) -> Result<Self, ApiError> {
        let mut requirements = Vec::new();
        if s.trim().is_empty() {
            return Ok(LabelSelector { requirements });
        }
        for part in split_top_level(s) {
            let part = part.trim();
            let r = parse_requirement(part).map_err(|why| {
                ApiError::bad_request(format!("unable to parse requirement: {part}: {why}"))
            })?;
            requirements.push(r);
        }
        Ok(LabelSelector { requirements })
    }

    /// Whether the labels (`metadata.labels`, an object or absent) satisfy every requirement.
    pub fn matches(&self, labels: Option<&Value>) -> bool {
        self.requirements.iter().all(|r| {
            let value = labels.and_then(|l| l.get(&r.key)).and_then(Value::as_str);
            let number = |v: &str| v.parse::<i64>().ok();
            match r.op {
                Op::Eq | Op::In => value.is_some_and(|v| r.values.iter().any(|x| x == v)),
                Op::NotEq | Op::NotIn => value.is_none_or(|v| r.values.iter().all(|x| x != v)),
                Op::Exists => value.is_some(),
                Op::DoesNotExist => value.is_none(),
                Op::Gt | Op::Lt => {
                    let (Some(have), Some(want)) = (
                        value.and_then(number),
                        r.values.first().and_then(|w| number(w)),
                    ) else {
                        return false;
                    };
                    if r.op == Op::Gt {
                        have > want
                    } else {
                        have < want
                    }
                }
            }
        })
    }

    /// Whether this selector matches everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }
}

/// A parsed field selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector {
    terms: Vec<(String, bool, String)>,
}

/// A field as a field selector compares it: strings as they are, numbers and booleans printed,
/// anything missing as the empty string.
pub fn field_value(object: &Value, path: &str) -> String {
    let mut cur = object;
    for seg in path.split('.') {
        match cur.get(seg) {
            Some(v) => cur = v,
            None => return String::new(),
        }
    }
    match cur {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        Value::Bool(_) | Value::Number(_) => cur.to_string(),
        _ => String::new(),
    }
}

impl FieldSelector {
    /// Parses the `fieldSelector` query parameter.
    pub fn parse(s: &str) -> Result<Self, ApiError> {
        let mut terms = Vec::new();
        if s.trim().is_empty() {
            return Ok(FieldSelector { terms });
        }
        for part in s.split(',') {
            let (path, equal, value) = if let Some((p, v)) = part.split_once("!=") {
                (p, false, v)
            } else if let Some((p, v)) = part.split_once("==") {
                (p, true, v)
            } else if let Some((p, v)) = part.split_once('=') {
                (p, true, v)
            } else {
                return Err(ApiError::bad_request(format!(
                    "invalid selector: '{s}'; can't understand '{part}'"
                )));
            };
            let path = path.trim();
            if path.is_empty() {
                return Err(ApiError::bad_request(format!(
                    "invalid field selector: '{s}'"
                )));
            }
            terms.push((path.to_string(), equal, value.trim().to_string()));
        }
        Ok(FieldSelector { terms })
    }

    /// Whether the object satisfies every term.
    pub fn matches(&self, object: &Value) -> bool {
        self.terms
            .iter()
            .all(|(path, equal, value)| (field_value(object, path) == *value) == *equal)
    }

    /// Whether this selector matches everything.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }
}

/// The label and field selectors of one list or watch.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Selectors {
    /// `labelSelector`.
    pub labels: LabelSelector,
    /// `fieldSelector`.
    pub fields: FieldSelector,
}

impl Selectors {
    /// Parses both query parameters; absent means everything.
    pub fn parse(labels: Option<&str>, fields: Option<&str>) -> Result<Self, ApiError> {
        Ok(Selectors {
            labels: LabelSelector::parse(labels.unwrap_or(""))?,
            fields: FieldSelector::parse(fields.unwrap_or(""))?,
        })
    }

    /// Whether the object is selected.
    pub fn matches(&self, object: &Value) -> bool {
        self.labels.matches(object.pointer("/metadata/labels")) && self.fields.matches(object)
    }

    /// Whether these selectors select everything.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(labels: Value, node: &str) -> Value {
        json!({"metadata": {"name": "p", "namespace": "ns", "labels": labels},
               "spec": {"nodeName": node}, "status": {"phase": "Running"}})
    }

    fn sel(l: &str, f: &str) -> Selectors {
        Selectors::parse(Some(l), Some(f)).unwrap()
    }

    #[test]
    fn label_forms() {
        let p = pod(json!({"app": "web", "tier": "front", "n": "5"}), "n1");
        assert!(sel("app=web", "").matches(&p));
        assert!(sel("app==web,tier", "").matches(&p));
        assert!(!sel("app!=web", "").matches(&p));
        assert!(sel("app in (db, web),tier notin (back)", "").matches(&p));
        assert!(!sel("app notin (web)", "").matches(&p));
        assert!(sel("!missing", "").matches(&p));
        assert!(!sel("missing", "").matches(&p));
        assert!(sel("missing!=x", "").matches(&p));
        assert!(sel("n>4,n<6", "").matches(&p));
        assert!(Selectors::parse(Some("a in (x"), None).is_err());
        assert!(Selectors::parse(Some("=x"), None).is_err());
    }

    #[test]
    fn field_forms() {
        let p = pod(json!({}), "n1");
        assert!(sel("", "metadata.name=p,metadata.namespace=ns").matches(&p));
        assert!(sel("", "spec.nodeName==n1,status.phase!=Pending").matches(&p));
        assert!(!sel("", "spec.nodeName=").matches(&p));
        assert!(sel("", "spec.nodeName=").matches(&pod(json!({}), "")));
        assert!(Selectors::parse(None, Some("nonsense")).is_err());
    }
}
