//! The API server's own figures, from its `/metrics` read before and after a run: requests
//! served by verb and resource (`apiserver_request_total`) and the server's CPU
//! (`process_cpu_seconds_total`). Parsing and differencing are pure; only [`scrape`] and
//! [`settled`] talk to the server.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

const REQUESTS: &str = "apiserver_request_total";
const CPU: &str = "process_cpu_seconds_total";
/// How often [`settled`] reads `/metrics`.
const SETTLE_POLL: Duration = Duration::from_millis(500);

/// A request class: what a user reads in an audit log (`create pods/binding`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct RequestKind {
    /// kubectl's word for the verb: `create`, `get`, `list`, `watch`, `update`, `patch`,
    /// `delete`, `deletecollection`, `apply`, `connect`.
    pub verb: String,
    /// The resource, with its subresource after a slash (`pods/binding`); `-` for requests
    /// of no resource (`/metrics`, `/readyz`).
    pub resource: String,
}

/// The figures of one read of `/metrics`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scrape {
    /// Requests served so far, by kind (summed over codes, groups, versions and scopes).
    pub requests: BTreeMap<RequestKind, f64>,
    /// CPU seconds the server has used, when it reports them.
    pub cpu_seconds: Option<f64>,
}

/// Requests of one kind during a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RequestCount {
    /// The verb (kubectl's word).
    pub verb: String,
    /// The resource (`pods`, `pods/binding`, `-` for none).
    pub resource: String,
    /// Requests served during the run.
    pub count: u64,
}

/// What the API server did during a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Delta {
    /// Requests by kind, most first.
    pub requests: Vec<RequestCount>,
    /// All requests.
    pub total: u64,
    /// CPU seconds used, when both reads report them.
    pub cpu_seconds: Option<f64>,
}

/// kubectl's word for the verb label of `apiserver_request_total` (which is the HTTP
/// method, or LIST, WATCH, APPLY, DELETECOLLECTION for what a method does on a collection).
fn verb_word(label: &str) -> String {
    match label {
        "POST" => "create".to_string(),
        "PUT" => "update".to_string(),
        other => other.to_ascii_lowercase(),
    }
}

/// One sample of the text format.
#[derive(Debug, PartialEq)]
struct Sample<'a> {
    name: &'a str,
    labels: Vec<(String, String)>,
    value: f64,
}

/// One sample line: `name{k="v",...} value [timestamp]`. `None` for a line that is not one.
fn sample(line: &str) -> Option<Sample<'_>> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let name_end = line.find(['{', ' ', '\t'])?;
    let name = &line[..name_end];
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(body) = rest.strip_prefix('{') {
        let (parsed, after) = labels_of(body)?;
        labels = parsed;
        rest = after;
    }
    let value = rest.split_whitespace().next()?;
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse().ok()?,
    };
    Some(Sample {
        name,
        labels,
        value,
    })
}

/// The labels after `{` up to the closing `}`, unescaping `\\`, `\"` and `\n`; and the text
/// after the brace.
fn labels_of(mut body: &str) -> Option<(Vec<(String, String)>, &str)> {
    let mut labels = Vec::new();
    loop {
        body = body.trim_start_matches([' ', ',']);
        if let Some(after) = body.strip_prefix('}') {
            return Some((labels, after));
        }
        let eq = body.find('=')?;
        let key = body[..eq].trim().to_string();
        let quoted = body[eq + 1..].trim_start().strip_prefix('"')?;
        let mut chars = quoted.char_indices();
        let mut value = String::new();
        let end = loop {
            let (i, c) = chars.next()?;
            match c {
                '"' => break i,
                '\\' => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    other => value.push(other),
                },
                c => value.push(c),
            }
        };
        labels.push((key, value));
        body = &quoted[end + 1..];
    }
}

impl Scrape {
    /// Reads the two families from a `/metrics` text; other lines, and lines that do not
    /// parse, are passed over (a server may add families and label values at will).
    pub fn parse(text: &str) -> Scrape {
        let mut scrape = Scrape::default();
        for Sample {
            name,
            labels,
            value,
        } in text.lines().filter_map(sample)
        {
            if name == CPU {
                scrape.cpu_seconds = Some(value);
            } else if name == REQUESTS {
                let label = |k: &str| {
                    labels
                        .iter()
                        .find(|(key, _)| key == k)
                        .map_or("", |(_, v)| v.as_str())
                };
                let resource = match (label("resource"), label("subresource")) {
                    ("", _) => "-".to_string(),
                    (r, "") => r.to_string(),
                    (r, sub) => format!("{r}/{sub}"),
                };
                let kind = RequestKind {
                    verb: verb_word(label("verb")),
                    resource,
                };
                *scrape.requests.entry(kind).or_default() += value;
            }
        }
        scrape
    }

    /// Writes served so far (creates, updates, patches, deletes), leases aside: a leader
    /// renews its lease every few seconds with or without work.
    pub fn writes(&self) -> f64 {
        self.requests
            .iter()
            .filter(|(kind, _)| {
                kind.resource != "leases"
                    && matches!(
                        kind.verb.as_str(),
                        "create" | "update" | "patch" | "apply" | "delete" | "deletecollection"
                    )
            })
            .map(|(_, count)| count)
            .sum()
    }

    /// What happened between `self` (before) and `after`. A counter lower after than before
    /// means the server restarted in between; its count after is then all that is known.
    pub fn delta(&self, after: &Scrape) -> Delta {
        let mut requests: Vec<RequestCount> = after
            .requests
            .iter()
            .filter_map(|(kind, now)| {
                let then = self.requests.get(kind).copied().unwrap_or(0.0);
                let diff = if *now >= then { now - then } else { *now };
                // Counters hold integers; the float is only the exposition format's.
                let count = diff.round().max(0.0) as u64;
                (count > 0).then(|| RequestCount {
                    verb: kind.verb.clone(),
                    resource: kind.resource.clone(),
                    count,
                })
            })
            .collect();
        requests.sort_by(|a, b| {
            b.count
                .cmp(&a.count)
                .then_with(|| (&a.verb, &a.resource).cmp(&(&b.verb, &b.resource)))
        });
        let total = requests.iter().map(|r| r.count).sum();
        let cpu_seconds = match (self.cpu_seconds, after.cpu_seconds) {
            (Some(then), Some(now)) if now >= then => Some(now - then),
            _ => None,
        };
        Delta {
            requests,
            total,
            cpu_seconds,
        }
    }
}

/// Reads `/metrics` until two reads half a second apart count the same writes, or `cap` has
/// passed, and returns the last read with the time it took. A scheduler's writes that follow
/// its bindings (events, status) are then part of the run's figures, however late they
/// come: a scheduler that defers its events must not look cheaper for it.
pub async fn settled(client: &kube::Client, cap: Duration) -> (anyhow::Result<Scrape>, Duration) {
    let started = tokio::time::Instant::now();
    let mut last = scrape(client).await;
    // A failed read ends the wait: the figures then say why there are none.
    let mut writes = last.as_ref().ok().map(Scrape::writes);
    while let Some(before) = writes
        && started.elapsed() < cap
    {
        tokio::time::sleep(SETTLE_POLL).await;
        last = scrape(client).await;
        writes = last.as_ref().ok().map(Scrape::writes);
        if writes == Some(before) {
            break;
        }
    }
    (last, started.elapsed())
}

/// Reads `/metrics` through `client` (whose identity must be allowed the non-resource URL).
pub async fn scrape(client: &kube::Client) -> anyhow::Result<Scrape> {
    let request = http::Request::get("/metrics").body(Vec::new())?;
    let text = client.request_text(request).await.map_err(|e| match e {
        kube::Error::Api(s) => anyhow::anyhow!("the API server answered {}: {}", s.code, s.message),
        other => anyhow::anyhow!("{other}"),
    })?;
    Ok(Scrape::parse(&text))
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = r#"# HELP apiserver_request_total [STABLE] Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 10
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 4
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="nodes",scope="cluster",subresource="",verb="LIST",version="v1"} 2
process_cpu_seconds_total 12.5
"#;

    const AFTER: &str = r#"apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 70
apiserver_request_total{code="409",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 1
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 64
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="nodes",scope="cluster",subresource="",verb="LIST",version="v1"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",scope="",subresource="",verb="GET",version=""} 3e0
apiserver_request_total{code="200",component="apiserver",dry_run="",group="scheduling.volcano.sh",resource="podgroups",scope="resource",subresource="status",verb="PATCH",version="v1beta1"} 5
process_cpu_seconds_total 15.75
"#;

    #[test]
    fn requests_are_summed_by_verb_and_resource_and_differenced() {
        let d = Scrape::parse(BEFORE).delta(&Scrape::parse(AFTER));
        let rows: Vec<(&str, &str, u64)> = d
            .requests
            .iter()
            .map(|r| (r.verb.as_str(), r.resource.as_str(), r.count))
            .collect();
        assert_eq!(
            rows,
            [
                ("create", "pods", 61),
                ("create", "pods/binding", 60),
                ("patch", "podgroups/status", 5),
                ("get", "-", 3),
            ]
        );
        assert_eq!(d.total, 129);
        assert_eq!(d.cpu_seconds, Some(3.25));
    }

    #[test]
    fn writes_are_creates_patches_and_deletes_but_neither_reads_nor_lease_renewals() {
        let text = format!(
            "{AFTER}apiserver_request_total{{verb=\"PUT\",resource=\"leases\"}} 9\n\
             apiserver_request_total{{verb=\"DELETE\",resource=\"pods\"}} 2\n"
        );
        // 70 + 1 + 64 creates, 5 patches, 2 deletes; the LIST, the GET and the lease
        // renewals are not writes.
        assert_eq!(Scrape::parse(&text).writes(), 142.0);
        assert_eq!(Scrape::default().writes(), 0.0);
    }

    #[test]
    fn a_restarted_server_counts_from_zero() {
        let after = Scrape::parse(
            "apiserver_request_total{verb=\"POST\",resource=\"pods\"} 3\nprocess_cpu_seconds_total 1\n",
        );
        let d = Scrape::parse(BEFORE).delta(&after);
        assert_eq!(d.requests[0].count, 3);
        assert_eq!(d.cpu_seconds, None);
    }

    #[test]
    fn labels_unescape_and_bad_lines_are_passed_over() {
        let s = sample(r#"m{a="x\"y",b="back\\slash", c="n\nl"} 2.5 1700000000"#);
        let Some(Sample {
            name,
            labels,
            value,
        }) = s
        else {
            panic!("no sample");
        };
        assert_eq!(name, "m");
        assert_eq!(
            labels,
            [
                ("a".to_string(), "x\"y".to_string()),
                ("b".to_string(), "back\\slash".to_string()),
                ("c".to_string(), "n\nl".to_string()),
            ]
        );
        assert_eq!(value, 2.5);
        assert_eq!(sample("m{a=\"unterminated} 1"), None);
        assert_eq!(sample("m nan-ish"), None);
        assert_eq!(sample("# comment"), None);
        let s = Scrape::parse("garbage\napiserver_request_total{verb=\"POST\" 1\n");
        assert_eq!(s, Scrape::default());
    }
}
