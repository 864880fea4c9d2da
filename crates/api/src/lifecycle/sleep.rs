//! How long a container whose whole work is `sleep N` runs: the one command whose outcome a
//! simulated kubelet can know without running it. `volcano up` reads it, so that a Job written
//! for a real cluster (`command: [sleep, "10"]`) completes there too.

use std::time::Duration;

/// How long the command line `argv` (a container's `command` then its `args`) runs when it is
/// `sleep N` (`["sleep", "5"]`, `["/bin/sleep", "2m"]`) or a shell running only `sleep` and
/// `echo` (`["sh", "-c", "echo hi; sleep 5"]`). None when it does anything else.
pub fn command_sleep<S: AsRef<str>>(argv: &[S]) -> Option<Duration> {
    let program = |s: &S| {
        s.as_ref()
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_string()
    };
    match argv {
        [cmd, n, ..] if program(cmd) == "sleep" => sleep_operand(n.as_ref()),
        [shell, flag, script, ..]
            if matches!(program(shell).as_str(), "sh" | "bash" | "ash" | "dash")
                && flag.as_ref() == "-c" =>
        {
            script_sleep(script.as_ref())
        }
        _ => None,
    }
}

/// The operand of coreutils' `sleep`: a number of seconds, with an optional `s`, `m`, `h` or
/// `d` suffix. `infinity`, and anything `sleep` would refuse, never ends.
fn sleep_operand(arg: &str) -> Option<Duration> {
    let units = [('s', 1.0), ('m', 60.0), ('h', 3_600.0), ('d', 86_400.0)];
    let (number, per) = units
        .iter()
        .find_map(|&(suffix, per)| arg.strip_suffix(suffix).map(|n| (n, per)))
        .unwrap_or((arg, 1.0));
    // `sleep` takes fractions (`0.5`), so the number is read as a float.
    let secs: f64 = number.parse().ok()?;
    if !secs.is_finite() {
        return None;
    }
    Duration::try_from_secs_f64(secs * per).ok()
}

/// The total of a script's sleeps when its statements (split at `;` and `&&`) are all `sleep N`
/// or `echo ...`, with at least one sleep; None for anything else, whose outcome is unknown.
fn script_sleep(script: &str) -> Option<Duration> {
    let mut total: Option<Duration> = None;
    for statement in script.split(';').flat_map(|s| s.split("&&")) {
        let words: Vec<&str> = statement.split_whitespace().collect();
        match words.as_slice() {
            [] | ["echo", ..] => {}
            ["sleep", n] => {
                let slept = sleep_operand(n)?;
                total = Some(total.unwrap_or_default().checked_add(slept)?);
            }
            _ => return None,
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Option<Duration> {
        Some(Duration::from_secs(s))
    }

    #[test]
    fn sleep_commands_direct_and_through_a_shell() {
        assert_eq!(command_sleep(&["sleep", "5"]), secs(5));
        assert_eq!(command_sleep(&["/bin/sh", "-c", "sleep 2m"]), secs(120));
        assert_eq!(
            command_sleep(&["sleep", "0.5"]),
            Some(Duration::from_millis(500))
        );
        assert_eq!(command_sleep(&["/usr/bin/sleep", "1d"]), secs(86_400));
        assert_eq!(
            command_sleep(&["sh", "-c", "echo hello from $(hostname); sleep 10"]),
            secs(10)
        );
        assert_eq!(
            command_sleep(&["bash", "-c", "sleep 1 && echo done && sleep 2;"]),
            secs(3)
        );
    }

    #[test]
    fn anything_else_never_ends() {
        for argv in [
            &["sleep", "infinity"][..],
            &["sleep", "-1"],
            &["sleep"],
            &["sh", "-c", "sleep 5; exit 1"],
            &["sh", "-c", "echo only"],
            &["python", "train.py"],
            &[],
        ] {
            assert_eq!(command_sleep(argv), None, "{argv:?}");
        }
    }
}
