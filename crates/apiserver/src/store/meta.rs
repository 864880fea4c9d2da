//! Object metadata the server owns: uids, generated names, name validation.

use serde_json::{Map, Value, json};

use crate::error::{ApiError, FieldError};
use crate::kinds::KindInfo;

/// Generates uids and `generateName` suffixes from a seeded counter: unique within a store,
/// different across stores with different seeds, and reproducible in tests.
#[derive(Debug)]
pub struct IdGen {
    state: u64,
}

impl IdGen {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        IdGen { state: seed }
    }

    /// splitmix64: a counter through a bijective mixer, so values never repeat within 2^64.
    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uid formatted like a random (version 4) UUID.
    pub fn uid(&mut self) -> String {
        let (a, b) = (self.next_u64(), self.next_u64());
        format!(
            "{:08x}-{:04x}-4{:03x}-{:x}{:03x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0xfff,
            8 | ((b >> 62) & 0x3),
            (b >> 48) & 0xfff,
            b & 0xffff_ffff_ffff
        )
    }

    /// Five characters from the alphabet Kubernetes uses for `generateName` (no vowels, no
    /// look-alikes).
    pub fn suffix(&mut self) -> String {
        const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
        let mut n = self.next_u64();
        (0..5)
            .map(|_| {
                let c = ALPHABET[(n % ALPHABET.len() as u64) as usize];
                n /= ALPHABET.len() as u64;
                char::from(c)
            })
            .collect()
    }
}

/// Whether `name` is a lowercase RFC 1123 label (`[a-z0-9]([-a-z0-9]*[a-z0-9])?`).
fn is_label(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// Checks an object name the way Kubernetes does: an RFC 1123 subdomain, or for namespaces a
/// label.
pub fn validate_name(kind: &KindInfo, name: &str) -> Result<(), ApiError> {
    let ok = if kind.resource == "namespaces" {
        is_label(name)
    } else {
        name.len() <= 253 && name.split('.').all(is_label)
    };
    if ok {
        return Ok(());
    }
    let why = if kind.resource == "namespaces" {
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', \
         and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', \
         regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
    } else {
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' \
         or '.', and must start and end with an alphanumeric character (e.g. 'example.com', \
         regex used for validation is \
         '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    };
    Err(ApiError::invalid_fields(
        kind,
        name,
        vec![FieldError::invalid("metadata.name", json!(name), why)],
    ))
}

/// `v` as a map, replacing it by an empty map if it is anything else.
pub fn ensure_object(v: &mut Value) -> &mut Map<String, Value> {
    if !v.is_object() {
        *v = Value::Object(Map::new());
    }
    match v {
        Value::Object(m) => m,
        // Made an object just above.
        _ => unreachable!("ensure_object: value was just made an object"),
    }
}

/// `metadata` of an object as a mutable map, created if missing or not a map.
pub fn meta_mut(object: &mut Value) -> &mut Map<String, Value> {
    let root = ensure_object(object);
    ensure_object(root.entry("metadata").or_insert(Value::Null))
}

/// A string field of `metadata`, empty when absent.
pub fn meta_str<'a>(object: &'a Value, field: &str) -> &'a str {
    object
        .get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The uids named by an object's `ownerReferences`.
pub fn owner_uids(object: &Value) -> Vec<String> {
    object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|refs| {
            refs.iter()
                .filter_map(|r| r.get("uid").and_then(Value::as_str))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds;

    #[test]
    fn uids_look_like_v4_and_do_not_repeat() {
        let mut ids = IdGen::new(7);
        let a = ids.uid();
        let b = ids.uid();
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
        assert!(matches!(&a[19..20], "8" | "9" | "a" | "b"));
        assert_eq!(ids.suffix().len(), 5);
    }

    #[test]
    fn names_are_validated() {
        let pods = kinds::pods();
        assert!(validate_name(pods, "web-0.a").is_ok());
        assert!(validate_name(pods, "Web").is_err());
        assert!(validate_name(pods, "-a").is_err());
        assert!(validate_name(kinds::namespaces(), "a.b").is_err());
    }
}
