//! Replays every saved fuzz input through its target: the corpus the fuzzers grew
//! (`fuzz/corpus/<target>`) and each input that ever crashed or hung a target
//! (`fuzz/regressions/<target>`). An input fails the test by panicking or by taking longer than
//! the limit, and the failure names the file.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use volcano_fuzz::{TARGETS, Target};

/// Far above what any saved input takes (milliseconds), far below a hang.
const LIMIT: Duration = Duration::from_secs(20);

fn inputs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// Runs `target` on the file in a thread of its own, so a panic or a hang is reported with the
/// file's name instead of ending the run.
fn replay(name: &str, target: Target, file: &Path) -> Result<(), String> {
    let data = std::fs::read(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        target(&data);
        let _ = done.send(());
    });
    match finished.recv_timeout(LIMIT) {
        Ok(()) => Ok(()),
        Err(mpsc::RecvTimeoutError::Timeout) => Err(format!(
            "{name}: {} took longer than {LIMIT:?}",
            file.display()
        )),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            Err(format!("{name}: {} panicked", file.display()))
        }
    }
}

#[test]
fn every_corpus_and_regression_input_runs_without_panic_or_hang() {
    let mut failures = Vec::new();
    for &(name, target) in TARGETS {
        let corpus = inputs(&fuzz_dir().join("corpus").join(name));
        assert!(
            !corpus.is_empty(),
            "fuzz/corpus/{name} holds no inputs: the replay would check nothing"
        );
        let regressions = inputs(&fuzz_dir().join("regressions").join(name));
        for file in corpus.iter().chain(&regressions) {
            if let Err(e) = replay(name, target, file) {
                failures.push(e);
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_target_has_a_cargo_fuzz_entry_point() {
    for &(name, _) in TARGETS {
        let source = fuzz_dir().join("fuzz_targets").join(format!("{name}.rs"));
        assert!(
            source.is_file(),
            "{} is missing: `cargo fuzz run {name}` would not find the target",
            source.display()
        );
    }
}
