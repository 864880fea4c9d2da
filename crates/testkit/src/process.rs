//! A child process of the test, logging to a file, killed when dropped.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::process::{Child, Command};

use crate::HarnessError;

/// A running component.
#[derive(Debug)]
pub struct Process {
    name: String,
    program: PathBuf,
    args: Vec<String>,
    log: PathBuf,
    child: Option<Child>,
}

impl Process {
    /// Starts `program` with `args`, appending its output to `log`.
    pub fn start(
        name: &str,
        program: &Path,
        args: Vec<String>,
        log: PathBuf,
    ) -> Result<Process, HarnessError> {
        let mut p = Process {
            name: name.to_string(),
            program: program.to_path_buf(),
            args,
            log,
            child: None,
        };
        p.spawn()?;
        Ok(p)
    }

    fn spawn(&mut self) -> Result<(), HarnessError> {
        let open = || {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.log)
        };
        let out =
            open().map_err(|e| HarnessError::io(format!("open {}", self.log.display()), e))?;
        let err =
            open().map_err(|e| HarnessError::io(format!("open {}", self.log.display()), e))?;
        let child = Command::new(&self.program)
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| HarnessError::io(format!("start {}", self.program.display()), e))?;
        self.child = Some(child);
        Ok(())
    }

    /// Kills the process (as a crash or a power loss would) and waits for it.
    pub async fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill().await;
        }
    }

    /// Starts the process again with the same arguments.
    pub fn restart(&mut self) -> Result<(), HarnessError> {
        if self.child.is_none() {
            self.spawn()?;
        }
        Ok(())
    }

    /// Whether it has exited on its own; its exit status then.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten())
    }

    /// The last `lines` lines of its log, without the echo of its flags.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().filter(|l| !l.contains("] FLAG: --")).collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Its name, for messages.
    pub fn name(&self) -> &str {
        &self.name
    }
}
