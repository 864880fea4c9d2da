//! How long a simulated pod runs: Go durations in annotations, and `sleep N` commands.

use std::time::Duration;

use serde_json::Value;

/// Parses a Go duration (`30s`, `2m`, `1h30m`, `1.5h`, `500ms`, `0`), as the controllers
/// read lifecycle timeouts.
pub fn parse_go_duration(s: &str) -> Option<Duration> {
    volcano_controllers::time::parse_duration(s.trim())
}

/// Parses the operand of `sleep`: seconds with an optional `s|m|h|d` suffix; `infinity` and
/// anything unreadable mean no end.
fn parse_sleep(arg: &str) -> Option<Duration> {
    let (number, scale) = match arg.char_indices().last() {
        Some((i, 's')) => (&arg[..i], 1.0),
        Some((i, 'm')) => (&arg[..i], 60.0),
        Some((i, 'h')) => (&arg[..i], 3600.0),
        Some((i, 'd')) => (&arg[..i], 86_400.0),
        _ => (arg, 1.0),
    };
    let secs: f64 = number.parse().ok()?;
    if !secs.is_finite() {
        return None;
    }
    Duration::try_from_secs_f64(secs * scale).ok()
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// How long a shell script runs when it is only `sleep N` and `echo ...` statements, joined by
/// `;` or `&&` (`echo hello from $(hostname); sleep 10`): the sum of its sleeps. None when it
/// does anything else, since its outcome cannot be known.
fn script_sleep(script: &str) -> Option<Duration> {
    let mut total = Duration::ZERO;
    let mut slept = false;
    for statement in script.split(';').flat_map(|s| s.split("&&")) {
        let words: Vec<&str> = statement.split_whitespace().collect();
        match words.as_slice() {
            [] => {}
            ["echo", ..] => {}
            ["sleep", n] => {
                total += parse_sleep(n)?;
                slept = true;
            }
            _ => return None,
        }
    }
    slept.then_some(total)
}

/// How long the first container of a pod sleeps, when its command is `sleep N` directly
/// (`["sleep", "5"]`) or through a shell (`["sh", "-c", "echo hi; sleep 5"]`, see
/// [`script_sleep`]). None when it does anything else.
pub fn sleep_duration(pod: &Value) -> Option<Duration> {
    let container = pod.pointer("/spec/containers/0")?;
    let mut argv = strings(container.get("command"));
    argv.extend(strings(container.get("args")));
    let program = |s: &str| s.rsplit('/').next().unwrap_or(s).to_string();
    match argv.as_slice() {
        [cmd, n, ..] if program(cmd) == "sleep" => parse_sleep(n),
        [shell, flag, script, ..]
            if matches!(program(shell).as_str(), "sh" | "bash" | "ash" | "dash")
                && flag == "-c" =>
        {
            script_sleep(script)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn go_durations() {
        assert_eq!(parse_go_duration("30s"), Some(Duration::from_secs(30)));
        assert_eq!(parse_go_duration("1h30m"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_go_duration("1.5h"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_go_duration("250ms"), Some(Duration::from_millis(250)));
        assert_eq!(parse_go_duration("0"), Some(Duration::ZERO));
        assert_eq!(parse_go_duration("5"), None);
        assert_eq!(parse_go_duration("-1s"), None);
        assert_eq!(parse_go_duration("1x"), None);
    }

    #[test]
    fn sleep_commands() {
        let pod = |c: Value| json!({"spec": {"containers": [c]}});
        let d = |c| sleep_duration(&pod(c));
        assert_eq!(
            d(json!({"command": ["sleep", "5"]})),
            Some(Duration::from_secs(5))
        );
        assert_eq!(
            d(json!({"command": ["/bin/sh", "-c", "sleep 2m"]})),
            Some(Duration::from_secs(120))
        );
        assert_eq!(
            d(json!({"command": ["sleep"], "args": ["0.5"]})),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            d(json!({"args": ["sleep", "1"]})),
            Some(Duration::from_secs(1))
        );
        assert_eq!(d(json!({"command": ["sleep", "infinity"]})), None);
        assert_eq!(d(json!({"command": ["sh", "-c", "sleep 5; exit 1"]})), None);
        assert_eq!(
            d(json!({"command": ["sh", "-c", "echo hello from $(hostname); sleep 10"]})),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            d(json!({"command": ["sh", "-c", "sleep 1 && echo done && sleep 2;"]})),
            Some(Duration::from_secs(3))
        );
        assert_eq!(d(json!({"command": ["sh", "-c", "echo only"]})), None);
        assert_eq!(d(json!({"command": ["python", "train.py"]})), None);
    }
}
