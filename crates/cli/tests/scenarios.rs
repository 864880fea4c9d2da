//! Scenario conformance tests: every `tests/scenarios/<case>.yaml` that has a matching
//! `<case>.expect.json` is run as `volcano schedule -f <case>.yaml --sessions 1 -o json` and the
//! JSON output is compared with the expectation using the same rules as the outside conformance
//! runner (`shared/conformance/run.py`): exact `bindings` (or `bindings_any_of`, or
//! `min_bindings`/`max_bindings`), the `evictions` multiset, `pipelined` allowed nodes, PodGroup
//! `phases` and `conditions` matchers, `events_required`/`events_forbidden`, and
//! `unschedulable_present`/`unschedulable_absent`.
//!
//! The cases mirror Volcano's own scheduler unit tests (each expectation's `note` names the Go test
//! case). All cases run (in parallel) and every failure is reported at once.
//! Set `VOLCANO_SCENARIO_FILTER=<substring>` to run only matching cases.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

const TIMEOUT: Duration = Duration::from_secs(30);

const KNOWN_KEYS: &[&str] = &[
    "bindings",
    "evictions",
    "pipelined",
    "phases",
    "bindings_any_of",
    "min_bindings",
    "max_bindings",
    "note",
    "jobs",
    "sessions",
    "conditions",
    "events_required",
    "events_forbidden",
    "unschedulable_present",
    "unschedulable_absent",
];

struct Case {
    id: String,
    yaml: PathBuf,
    expect: PathBuf,
}

/// The case directories: this crate's scenarios, and the user-facing examples, which carry
/// expectations too so that what the README shows stays true.
fn scenario_dirs() -> Vec<PathBuf> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    vec![
        manifest.join("tests").join("scenarios"),
        manifest.join("../../examples"),
    ]
}

fn discover(filter: Option<&str>) -> Vec<Case> {
    let mut cases = Vec::new();
    for dir in scenario_dirs() {
        discover_in(&dir, filter, &mut cases);
    }
    cases.sort_by(|a, b| a.id.cmp(&b.id));
    cases
}

fn discover_in(dir: &Path, filter: Option<&str>, cases: &mut Vec<Case>) {
    let entries = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read scenario directory {}: {e}", dir.display()));
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(id) = name.strip_suffix(".expect.json") else {
            continue;
        };
        let yaml = dir.join(format!("{id}.yaml"));
        if !yaml.exists() {
            continue;
        }
        if filter.is_some_and(|f| !id.contains(f)) {
            continue;
        }
        cases.push(Case {
            id: id.to_string(),
            yaml,
            expect: entry.path(),
        });
    }
}

/// The first lines of a process stream, joined, as run.py shows them.
fn head(data: &[u8], lines: usize, limit: usize) -> String {
    let text = String::from_utf8_lossy(data);
    let joined: Vec<&str> = text
        .trim()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(lines)
        .collect();
    joined.join(" | ").chars().take(limit).collect()
}

fn read_all(stream: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut s) = stream {
            let _ = s.read_to_end(&mut buf);
        }
        buf
    })
}

/// Runs the binary on one scenario; returns the output object or a description of the failure.
/// `sessions` is 1 as in the conformance runner, unless the case asks for more (a volcano-rs
/// extension for Job scenarios, whose pods appear only once the first session admitted them).
fn run_binary(yaml: &Path, sessions: u64) -> Result<Map<String, Value>, String> {
    let bin = env!("CARGO_BIN_EXE_volcano");
    let mut child = Command::new(bin)
        .arg("schedule")
        .arg("-f")
        .arg(yaml)
        .args(["--sessions", &sessions.to_string(), "-o", "json"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {bin}: {e}"))?;
    let out_reader = read_all(child.stdout.take());
    let err_reader = read_all(child.stderr.take());
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() > TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                let err = err_reader.join().unwrap_or_default();
                return Err(format!(
                    "timeout after {}s; stderr: {}",
                    TIMEOUT.as_secs(),
                    head(&err, 3, 300)
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            Err(e) => return Err(format!("waiting for {bin}: {e}")),
        }
    };
    let stdout = out_reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    let err = head(&stderr, 3, 300);
    if !status.success() {
        let what = match status.code() {
            Some(code) => format!("exit status {code}"),
            None => "killed by a signal".to_string(),
        };
        return Err(if err.is_empty() {
            what
        } else {
            format!("{what}; stderr: {err}")
        });
    }
    match serde_json::from_slice::<Value>(&stdout) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(format!(
            "stdout JSON is not an object: {}",
            head(other.to_string().as_bytes(), 1, 200)
        )),
        Err(e) => Err(format!(
            "stdout is not one JSON object ({e}); stdout: {}{}",
            head(&stdout, 2, 200),
            if err.is_empty() {
                String::new()
            } else {
                format!("; stderr: {err}")
            }
        )),
    }
}

// ------------------------------------------------------------------------------------------------
// Comparison (the semantics of run.py's compare())
// ------------------------------------------------------------------------------------------------

/// Python's `str()` of a JSON value as run.py applies it: strings as-is, the rest as JSON text.
fn py_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn fmt_map(m: &Map<String, Value>) -> String {
    let mut items: Vec<(&String, &Value)> = m.iter().collect();
    items.sort_by(|a, b| a.0.cmp(b.0));
    let parts: Vec<String> = items
        .iter()
        .map(|(k, v)| format!("{k}->{}", py_str(v)))
        .collect();
    format!("{{{}}}", parts.join(", "))
}

/// An output section that must be an object; missing or null counts as empty.
fn section_obj<'a>(
    out: &'a Map<String, Value>,
    key: &str,
    diffs: &mut Vec<String>,
) -> Option<&'a Map<String, Value>> {
    match out.get(key) {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => Some(m),
        Some(_) => {
            diffs.push(format!("output '{key}' is not a JSON object"));
            None
        }
    }
}

/// An output section that must be an array; missing or null counts as empty.
fn section_arr<'a>(out: &'a Map<String, Value>, key: &str, diffs: &mut Vec<String>) -> &'a [Value] {
    match out.get(key) {
        None | Some(Value::Null) => &[],
        Some(Value::Array(a)) => a,
        Some(_) => {
            diffs.push(format!("output '{key}' is not a JSON array"));
            &[]
        }
    }
}

fn matches(obj: &Value, matcher: &Map<String, Value>) -> bool {
    let Value::Object(obj) = obj else {
        return false;
    };
    matcher.iter().all(|(k, v)| {
        if k == "message_prefix" {
            let msg = obj.get("message").map(py_str).unwrap_or_default();
            msg.starts_with(&py_str(v))
        } else {
            obj.get(k).unwrap_or(&Value::Null) == v
        }
    })
}

fn as_matcher(v: &Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    }
}

fn obj_of(v: Option<&Value>) -> Map<String, Value> {
    match v {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    }
}

fn arr_of(v: Option<&Value>) -> Vec<Value> {
    match v {
        Some(Value::Array(a)) => a.clone(),
        _ => Vec::new(),
    }
}

fn multiset<'a>(items: impl Iterator<Item = &'a Value>) -> BTreeMap<String, i64> {
    let mut m = BTreeMap::new();
    for v in items {
        *m.entry(py_str(v)).or_insert(0) += 1;
    }
    m
}

fn multiset_minus(a: &BTreeMap<String, i64>, b: &BTreeMap<String, i64>) -> Vec<String> {
    let mut out = Vec::new();
    for (k, n) in a {
        let left = n - b.get(k).copied().unwrap_or(0);
        for _ in 0..left.max(0) {
            out.push(k.clone());
        }
    }
    out
}

fn compare(exp: &Map<String, Value>, out: &Map<String, Value>) -> Vec<String> {
    let mut diffs = Vec::new();
    let unknown: Vec<&String> = exp
        .keys()
        .filter(|k| !KNOWN_KEYS.contains(&k.as_str()))
        .collect();
    if !unknown.is_empty() {
        return vec![format!("bad expectation file: unknown key(s) {unknown:?}")];
    }

    // bindings
    let empty = Map::new();
    let got_b = section_obj(out, "bindings", &mut diffs).unwrap_or(&empty);
    if let Some(alts) = exp.get("bindings_any_of") {
        let alts = arr_of(Some(alts));
        if !alts.iter().any(|alt| alt.as_object() == Some(got_b)) {
            let example = alts
                .first()
                .and_then(Value::as_object)
                .map_or_else(|| "{}".to_string(), fmt_map);
            diffs.push(format!(
                "bindings {} match none of the {} allowed alternatives (e.g. {example})",
                fmt_map(got_b),
                alts.len()
            ));
        }
    } else if exp.contains_key("min_bindings") || exp.contains_key("max_bindings") {
        let n = got_b.len() as u64;
        if let Some(lo) = exp.get("min_bindings").and_then(Value::as_u64)
            && n < lo
        {
            diffs.push(format!("bindings: {n} < min {lo}: {}", fmt_map(got_b)));
        }
        if let Some(hi) = exp.get("max_bindings").and_then(Value::as_u64)
            && n > hi
        {
            diffs.push(format!("bindings: {n} > max {hi}: {}", fmt_map(got_b)));
        }
        for (pod, node) in obj_of(exp.get("bindings")) {
            if got_b.get(&pod) != Some(&node) {
                let got = got_b
                    .get(&pod)
                    .map_or_else(|| "unbound".to_string(), py_str);
                diffs.push(format!(
                    "bindings: want {pod}->{}, got {got}",
                    py_str(&node)
                ));
            }
        }
    } else {
        let want = obj_of(exp.get("bindings"));
        let missing: Map<String, Value> = want
            .iter()
            .filter(|(k, _)| !got_b.contains_key(*k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut wrong: Vec<String> = want
            .iter()
            .filter_map(|(k, v)| {
                let got = got_b.get(k)?;
                (got != v).then(|| format!("{k}->{} (want {})", py_str(got), py_str(v)))
            })
            .collect();
        wrong.sort();
        let extra: Map<String, Value> = got_b
            .iter()
            .filter(|(k, _)| !want.contains_key(*k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut parts = Vec::new();
        if !missing.is_empty() {
            parts.push(format!("missing {}", fmt_map(&missing)));
        }
        if !wrong.is_empty() {
            parts.push(format!("wrong {}", wrong.join(", ")));
        }
        if !extra.is_empty() {
            parts.push(format!("extra {}", fmt_map(&extra)));
        }
        if !parts.is_empty() {
            diffs.push(format!("bindings: {}", parts.join("; ")));
        }
    }

    // evictions (multiset)
    let got_e = multiset(section_arr(out, "evictions", &mut diffs).iter());
    let want_e_list = arr_of(exp.get("evictions"));
    let want_e = multiset(want_e_list.iter());
    let missing_e = multiset_minus(&want_e, &got_e);
    let extra_e = multiset_minus(&got_e, &want_e);
    if !missing_e.is_empty() || !extra_e.is_empty() {
        let mut parts = Vec::new();
        if !missing_e.is_empty() {
            parts.push(format!("missing {missing_e:?}"));
        }
        if !extra_e.is_empty() {
            parts.push(format!("extra {extra_e:?}"));
        }
        diffs.push(format!("evictions: {}", parts.join("; ")));
    }

    // pipelined: each listed pod must be pipelined on one of the allowed nodes
    let got_p = section_obj(out, "pipelined", &mut diffs)
        .cloned()
        .unwrap_or_default();
    for (pod, allowed) in obj_of(exp.get("pipelined")) {
        let allowed = arr_of(Some(&allowed));
        let Some(node) = got_p.get(&pod) else {
            diffs.push(format!(
                "pipelined: {pod} not pipelined (want on {})",
                Value::Array(allowed)
            ));
            continue;
        };
        let nodes = match node {
            Value::Array(a) => a.clone(),
            other => vec![other.clone()],
        };
        if nodes.is_empty() || nodes.iter().any(|n| !allowed.contains(n)) {
            diffs.push(format!(
                "pipelined: {pod} on {node}, want one of {}",
                Value::Array(allowed)
            ));
        }
    }

    // Volcano Jobs: each listed field must match (a volcano-rs extension of the format).
    if exp.get("jobs").is_some() {
        let jobs = section_obj(out, "jobs", &mut diffs)
            .cloned()
            .unwrap_or_default();
        for (key, wanted) in obj_of(exp.get("jobs")) {
            match jobs.get(&key) {
                Some(Value::Object(got)) => {
                    for (field, want) in obj_of(Some(&wanted)) {
                        let have = got.get(&field).unwrap_or(&Value::Null);
                        if *have != want {
                            diffs.push(format!(
                                "job {key}: {field} want {}, got {}",
                                py_str(&want),
                                py_str(have)
                            ));
                        }
                    }
                }
                _ => diffs.push(format!("job {key} missing from output")),
            }
        }
    }

    // PodGroup phases and conditions
    let pgs = section_obj(out, "podgroups", &mut diffs)
        .cloned()
        .unwrap_or_default();
    for (key, phase) in obj_of(exp.get("phases")) {
        match pgs.get(&key) {
            Some(Value::Object(st)) => {
                let got = st.get("phase").unwrap_or(&Value::Null);
                if *got != phase {
                    diffs.push(format!(
                        "phase {key}: want {}, got {}",
                        py_str(&phase),
                        py_str(got)
                    ));
                }
            }
            _ => diffs.push(format!("phase: podgroup {key} missing from output")),
        }
    }
    for (key, wanted) in obj_of(exp.get("conditions")) {
        let conds = match pgs.get(&key) {
            Some(Value::Object(st)) => arr_of(st.get("conditions")),
            _ => Vec::new(),
        };
        for m in arr_of(Some(&wanted)) {
            let m = as_matcher(&m);
            if !conds.iter().any(|c| matches(c, &m)) {
                let have: Vec<String> = conds
                    .iter()
                    .filter_map(Value::as_object)
                    .map(|c| {
                        format!(
                            "{}={}",
                            c.get("type").map(py_str).unwrap_or_default(),
                            c.get("status").map(py_str).unwrap_or_default()
                        )
                    })
                    .collect();
                diffs.push(format!(
                    "conditions {key}: none matches {} (have {have:?})",
                    Value::Object(m)
                ));
            }
        }
    }

    // events
    let events = section_arr(out, "events", &mut diffs).to_vec();
    for m in arr_of(exp.get("events_required")) {
        let m = as_matcher(&m);
        if !events.iter().any(|e| matches(e, &m)) {
            diffs.push(format!("events: none matches {}", Value::Object(m)));
        }
    }
    for m in arr_of(exp.get("events_forbidden")) {
        let m = as_matcher(&m);
        let bad: Vec<&Value> = events.iter().filter(|e| matches(e, &m)).collect();
        if let Some(e) = bad.first() {
            let field = |k: &str| e.get(k).map(py_str).unwrap_or_default();
            diffs.push(format!(
                "events: {} forbidden event(s) matching {}, e.g. {} {} on {}: {}",
                bad.len(),
                Value::Object(m),
                field("type"),
                field("reason"),
                field("object"),
                field("message").chars().take(120).collect::<String>()
            ));
        }
    }

    // unschedulable report
    let uns = section_obj(out, "unschedulable", &mut diffs)
        .cloned()
        .unwrap_or_default();
    for key in arr_of(exp.get("unschedulable_present")) {
        let key = py_str(&key);
        if !uns.contains_key(&key) {
            diffs.push(format!("unschedulable: {key} not reported"));
        }
    }
    for key in arr_of(exp.get("unschedulable_absent")) {
        let key = py_str(&key);
        if let Some(entry) = uns.get(&key) {
            diffs.push(format!(
                "unschedulable: {key} reported but fully scheduled ({entry})"
            ));
        }
    }
    diffs
}

fn check_case(case: &Case) -> Result<(), String> {
    let text =
        std::fs::read_to_string(&case.expect).map_err(|e| format!("bad expectation file: {e}"))?;
    let exp = match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(m)) => m,
        Ok(_) => return Err("bad expectation file: not a JSON object".to_string()),
        Err(e) => return Err(format!("bad expectation file: {e}")),
    };
    let note = exp.get("note").map(py_str).unwrap_or_default();
    let sessions = exp.get("sessions").and_then(Value::as_u64).unwrap_or(1);
    let out = run_binary(&case.yaml, sessions).map_err(|e| format!("{e}\n    ({note})"))?;
    let diffs = compare(&exp, &out);
    if diffs.is_empty() {
        Ok(())
    } else {
        Err(format!("{}\n    ({note})", diffs.join("\n    ")))
    }
}

#[test]
fn scenarios_match_volcano() {
    let filter = std::env::var("VOLCANO_SCENARIO_FILTER").ok();
    let cases = discover(filter.as_deref());
    assert!(
        !cases.is_empty(),
        "no scenario case found in {:?} (filter {filter:?})",
        scenario_dirs()
    );

    let next = AtomicUsize::new(0);
    let failures: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism()
        .map_or(4, usize::from)
        .min(8);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(case) = cases.get(i) else { break };
                    if let Err(why) = check_case(case) {
                        let mut f = failures.lock().unwrap_or_else(|p| p.into_inner());
                        f.push((case.id.clone(), why));
                    }
                }
            });
        }
    });

    let mut failures = failures.into_inner().unwrap_or_else(|p| p.into_inner());
    failures.sort();
    let passed = cases.len() - failures.len();
    eprintln!("{passed} passed, {} failed", failures.len());
    if !failures.is_empty() {
        let report: Vec<String> = failures
            .iter()
            .map(|(id, why)| format!("FAIL {id}:\n    {why}"))
            .collect();
        panic!(
            "{} of {} scenario case(s) failed:\n{}\n{passed} passed, {} failed",
            failures.len(),
            cases.len(),
            report.join("\n"),
            failures.len()
        );
    }
}
