//! Kubernetes name formats (`k8s.io/apimachinery/pkg/util/validation`), with the API server's
//! own wording, so a rejected name reads as it would from `kubectl apply`. Written by hand
//! because the crate has no regex engine and these grammars are tiny.

const DNS1123_LABEL_MAX: usize = 63;
const DNS1123_SUBDOMAIN_MAX: usize = 253;
const QUALIFIED_NAME_MAX: usize = 63;

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";

fn max_len_error(max: usize) -> String {
    format!("must be no more than {max} characters")
}

/// The API server's `RegexError` shape (apimachinery 0.36, the version Volcano builds with).
fn regex_error(msg: &str, re: &str, examples: &[&str]) -> String {
    let examples = examples
        .iter()
        .map(|e| format!("'{e}'"))
        .collect::<Vec<_>>()
        .join(", ");
    format!("{msg} (e.g. {examples}; regex: '{re}')")
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?` without the length limit.
fn matches_label(s: &str) -> bool {
    let bytes = s.as_bytes();
    let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            alnum(first) && alnum(last) && bytes.iter().all(|b| alnum(b) || *b == b'-')
        }
        _ => false,
    }
}

fn matches_subdomain(s: &str) -> bool {
    s.split('.').all(matches_label)
}

fn matches_qualified_name(s: &str) -> bool {
    let bytes = s.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// Why `value` is not a DNS-1123 label (`IsDNS1123Label`); empty when it is one.
pub(crate) fn dns1123_label_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX {
        errs.push(max_len_error(DNS1123_LABEL_MAX));
    }
    if !matches_label(value) {
        if matches_subdomain(value) {
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters \
                 or '-', and must start and end with an alphanumeric character",
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// Why `value` is not a DNS-1123 subdomain (`IsDNS1123Subdomain`); empty when it is one.
pub(crate) fn dns1123_subdomain_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX));
    }
    if !matches_subdomain(value) {
        errs.push(regex_error(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \
             '-' or '.', and must start and end with an alphanumeric character",
            &format!("{DNS1123_LABEL_FMT}(\\.{DNS1123_LABEL_FMT})*"),
            &["example.com"],
        ));
    }
    errs
}

/// Why `value` is not a qualified name (`IsQualifiedName`: `[prefix/]name`); empty when it is.
pub(crate) fn qualified_name_errors(value: &str) -> Vec<String> {
    const MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start \
                       and end with an alphanumeric character";
    let examples = ["MyName", "my.name", "123-abc"];
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    dns1123_subdomain_errors(prefix)
                        .into_iter()
                        .map(|e| format!("prefix part {e}")),
                );
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. \
                 'example.com/MyName')",
                regex_error(MSG, QUALIFIED_NAME_FMT, &examples)
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > QUALIFIED_NAME_MAX {
        errs.push(format!("name part {}", max_len_error(QUALIFIED_NAME_MAX)));
    }
    if !matches_qualified_name(name) {
        errs.push(format!(
            "name part {}",
            regex_error(MSG, QUALIFIED_NAME_FMT, &examples)
        ));
    }
    errs
}

/// Go's `%v` of a `[]string`, which is how Volcano prints these lists in its reasons.
pub(crate) fn go_list<T: std::fmt::Display>(items: &[T]) -> String {
    let items: Vec<String> = items.iter().map(|i| i.to_string()).collect();
    format!("[{}]", items.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        assert!(dns1123_label_errors("worker-1").is_empty());
        assert_eq!(dns1123_label_errors("a.b"), ["must not contain dots"]);
        let upper = dns1123_label_errors("Worker");
        assert_eq!(upper.len(), 1);
        assert!(upper[0].starts_with("a lowercase RFC 1123 label must consist of"));
        assert!(
            upper[0]
                .ends_with("(e.g. 'my-name', '123-abc'; regex: '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
        );
        assert_eq!(dns1123_label_errors(&"a".repeat(64)), [max_len_error(63)]);
        assert_eq!(dns1123_label_errors("").len(), 1);
        assert_eq!(dns1123_label_errors("-a").len(), 1);
    }

    #[test]
    fn subdomains() {
        assert!(dns1123_subdomain_errors("data.team-a").is_empty());
        assert_eq!(dns1123_subdomain_errors("a..b").len(), 1);
        assert_eq!(dns1123_subdomain_errors("Data").len(), 1);
    }

    #[test]
    fn qualified_names() {
        assert!(qualified_name_errors("My_job.1").is_empty());
        assert_eq!(
            qualified_name_errors(""),
            [
                "name part must be non-empty",
                &qualified_name_errors("-")[0]
            ]
        );
        assert_eq!(
            qualified_name_errors(&"a".repeat(64)),
            ["name part must be no more than 63 characters"]
        );
        assert!(qualified_name_errors("example.com/x").is_empty());
        assert_eq!(
            qualified_name_errors("/x"),
            ["prefix part must be non-empty"]
        );
        assert!(qualified_name_errors("a/b/c")[0].starts_with("a qualified name must consist"));
    }
}
