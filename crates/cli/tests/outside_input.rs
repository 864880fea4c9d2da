//! Every subcommand that reads a file, fed hand-made bad files and mutated good ones: a bad
//! file ends with exit status 2 and a message naming it; nothing panics (exit 101), dies of a
//! signal or hangs.

// Test helpers outside #[test] functions: a failure to write a temp file is a broken test machine.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Far beyond what any of these runs takes; reaching it is a hang.
const LIMIT: Duration = Duration::from_secs(60);

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("volcano-outside-input-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Files that no subcommand can accept, whatever it reads them as.
fn hand_made() -> Vec<(&'static str, Vec<u8>)> {
    let deep = format!("{}{}", "[".repeat(20_000), "]".repeat(20_000));
    vec![
        ("binary", (0u8..=255).cycle().take(4096).collect()),
        ("not-utf8", b"kind: Node\nmetadata: {name: \xff\xfe}\n".to_vec()),
        ("broken-yaml", b"kind: [Node\nmetadata: {name: n1\n".to_vec()),
        ("a-list-at-the-top", b"- 1\n- 2\n".to_vec()),
        ("deeply-nested", deep.into_bytes()),
        (
            "huge-quantity",
            b"apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: 1e9999999}}\n"
                .to_vec(),
        ),
        (
            "unknown-kind",
            b"apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g}\n".to_vec(),
        ),
    ]
}

/// A deterministic scramble of `seed`'s bytes: truncations and byte changes at places a
/// small linear congruential generator picks.
fn mutate(good: &[u8], seed: u64) -> Vec<u8> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut next = |bound: usize| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 33) as usize) % bound.max(1)
    };
    let mut out = good.to_vec();
    match seed % 3 {
        0 => out.truncate(next(out.len())),
        1 => {
            for _ in 0..8 {
                let at = next(out.len());
                let b = b":{}[]-\n 0#&*!|>'\"9"[next(19)];
                if let Some(slot) = out.get_mut(at) {
                    *slot = b;
                }
            }
        }
        _ => {
            let from = next(out.len());
            let to = (from + next(200)).min(out.len());
            out.drain(from..to);
        }
    }
    out
}

/// Runs `volcano args…`, with `{}` in an argument replaced by `file`; the exit status, or a
/// failure naming what went wrong when there is none.
fn run(args: &[&str], file: &Path) -> Result<(i32, String), String> {
    let args: Vec<String> = args
        .iter()
        .map(|a| a.replace("{}", &file.display().to_string()))
        .collect();
    let mut child = Command::new(env!("CARGO_BIN_EXE_volcano"))
        .args(&args)
        .env("KUBECONFIG", file)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut stderr = String::new();
            if let Some(mut pipe) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut pipe, &mut stderr);
            }
            return match status.code() {
                Some(code) => Ok((code, stderr)),
                None => Err(format!("volcano {args:?} died of a signal: {stderr}")),
            };
        }
        if start.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("volcano {args:?} hung (more than {LIMIT:?})"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The subcommands and how each reads a file (`{}`).
fn readers(quickstart: &str) -> Vec<Vec<String>> {
    let cmds: Vec<Vec<&str>> = vec![
        vec!["schedule", "-f", "{}", "-o", "json"],
        vec!["sim", "-f", "{}", "-o", "json", "--max-time", "2h"],
        vec!["sim", "-f", quickstart, "--conf", "{}", "-o", "json"],
        vec!["bench", "--conf", "{}", "--nodes", "4", "--jobs", "4"],
        vec![
            "sim",
            "alloc-vs-load",
            "--conf",
            "{}",
            "--nodes",
            "2",
            "--pods",
            "4",
            "--seeds",
            "1",
        ],
    ];
    cmds.into_iter()
        .map(|c| c.into_iter().map(String::from).collect())
        .collect()
}

/// The subcommands that would go on running (a server, a daemon) given a good file; fed only
/// files that cannot be good.
fn daemons() -> Vec<Vec<&'static str>> {
    vec![
        vec!["scheduler", "--kubeconfig", "{}"],
        vec!["controller-manager", "--kubeconfig", "{}"],
        vec!["queue", "list", "--kubeconfig", "{}"],
        vec!["job", "run", "-f", "{}", "-s", "http://127.0.0.1:9"],
        vec![
            "up",
            "--scheduler-conf",
            "{}",
            "--listen",
            "127.0.0.1:0",
            "--kubeconfig-out",
            "{}.kubeconfig",
        ],
    ]
}

#[test]
fn a_bad_file_ends_every_subcommand_with_status_2_and_its_name() {
    let dir = scratch();
    let quickstart = examples().join("quickstart.yaml").display().to_string();
    let mut failures = Vec::new();
    for (name, bytes) in hand_made() {
        let file = dir.join(format!("{name}.yaml"));
        std::fs::write(&file, &bytes).unwrap();
        let owned = readers(&quickstart);
        let mut all: Vec<Vec<&str>> = owned
            .iter()
            .map(|c| c.iter().map(String::as_str).collect())
            .collect();
        all.extend(daemons());
        for cmd in &all {
            match run(cmd, &file) {
                Ok((2, stderr)) if stderr.contains(&format!("{name}.yaml")) => {}
                Ok((2, stderr)) => failures.push(format!(
                    "{name}: volcano {cmd:?} exited 2 without naming the file: {stderr}"
                )),
                Ok((code, stderr)) => failures.push(format!(
                    "{name}: volcano {cmd:?} exited {code}, not 2: {stderr}"
                )),
                Err(e) => failures.push(format!("{name}: {e}")),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn mutated_good_files_are_either_accepted_or_refused_with_status_2() {
    let dir = scratch();
    let quickstart = examples().join("quickstart.yaml");
    let sources = [
        quickstart.clone(),
        examples().join("gang.yaml"),
        examples().join("preempt.yaml"),
    ];
    let mut failures = Vec::new();
    for source in &sources {
        let good = std::fs::read(source).unwrap();
        let stem = source.file_stem().unwrap().to_string_lossy().to_string();
        for seed in 0..6 {
            let file = dir.join(format!("{stem}-mutated-{seed}.yaml"));
            std::fs::write(&file, mutate(&good, seed)).unwrap();
            for cmd in readers(&quickstart.display().to_string()) {
                let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
                match run(&cmd, &file) {
                    Ok((0 | 2, _)) => {}
                    Ok((code, stderr)) => failures.push(format!(
                        "{}: volcano {cmd:?} exited {code}: {stderr}",
                        file.display()
                    )),
                    Err(e) => failures.push(format!("{}: {e}", file.display())),
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
