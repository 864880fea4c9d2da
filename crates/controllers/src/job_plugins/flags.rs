//! Plugin arguments in the syntax of Go's `flag` package, which Volcano's plugins use:
//! `-name`, `--name`, `--name=value`, and `--name value` for flags that take a value.
//!
//! Unlike Volcano, which logs a parse failure and carries on with whatever it parsed so far, an
//! unknown flag, a stray word or a malformed value is an error naming the argument: a job whose
//! plugin arguments are silently half-ignored is harder to debug than one that is refused.

use std::collections::BTreeMap;

use super::PluginError;

/// Whether a flag stands alone (a switch) or takes a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Arity {
    /// `--name` means true; `--name=false` is the only way to give it a value.
    Switch,
    /// `--name=value` or `--name value`.
    Value,
}

/// Parsed arguments of one plugin: each flag's last given value.
#[derive(Debug)]
pub(super) struct Flags {
    plugin: &'static str,
    values: BTreeMap<&'static str, String>,
}

impl Flags {
    /// Parses `args` against the flags the plugin knows.
    pub(super) fn parse(
        plugin: &'static str,
        args: &[String],
        known: &[(&'static str, Arity)],
    ) -> Result<Self, PluginError> {
        let err = |message: String| PluginError::new(plugin, message);
        let mut values = BTreeMap::new();
        let mut rest = args.iter();
        while let Some(arg) = rest.next() {
            if arg == "--" {
                // Go stops at `--` and leaves the rest as positional arguments, which no
                // plugin reads.
                if let Some(extra) = rest.next() {
                    return Err(err(format!("unexpected argument {extra:?} after \"--\"")));
                }
                break;
            }
            let body = arg
                .strip_prefix("--")
                .or_else(|| arg.strip_prefix('-'))
                .filter(|b| !b.is_empty() && !b.starts_with(['-', '=']))
                .ok_or_else(|| {
                    err(format!(
                        "unexpected argument {arg:?}: expected a flag such as --name=value"
                    ))
                })?;
            let (name, inline) = match body.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (body, None),
            };
            let (known_name, arity) = known
                .iter()
                .copied()
                .find(|(candidate, _)| *candidate == name)
                .ok_or_else(|| err(unknown_flag(name, known)))?;
            let value = match (arity, inline) {
                (_, Some(value)) => value.to_string(),
                (Arity::Switch, None) => "true".to_string(),
                (Arity::Value, None) => rest
                    .next()
                    .cloned()
                    .ok_or_else(|| err(format!("flag --{name} needs a value")))?,
            };
            values.insert(known_name, value);
        }
        Ok(Flags { plugin, values })
    }

    /// A switch's value, accepting the spellings Go's `strconv.ParseBool` does.
    pub(super) fn switch(&self, name: &str, default: bool) -> Result<bool, PluginError> {
        let Some(value) = self.values.get(name) else {
            return Ok(default);
        };
        match value.as_str() {
            "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(true),
            "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(false),
            other => Err(PluginError::new(
                self.plugin,
                format!("flag --{name} wants true or false, not {other:?}"),
            )),
        }
    }

    /// A value flag's text, if given.
    pub(super) fn text(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// A value flag's integer, if given.
    pub(super) fn integer(&self, name: &str) -> Result<Option<i64>, PluginError> {
        self.text(name)
            .map(|v| {
                v.parse::<i64>().map_err(|_| {
                    PluginError::new(
                        self.plugin,
                        format!("flag --{name} wants an integer, not {v:?}"),
                    )
                })
            })
            .transpose()
    }
}

fn unknown_flag(name: &str, known: &[(&'static str, Arity)]) -> String {
    if known.is_empty() {
        return format!("unknown flag --{name}: this plugin takes no arguments");
    }
    let names: Vec<String> = known.iter().map(|(n, _)| format!("--{n}")).collect();
    format!("unknown flag --{name}; known flags: {}", names.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KNOWN: &[(&str, Arity)] = &[("on", Arity::Switch), ("path", Arity::Value)];

    fn parse(args: &[&str]) -> Result<Flags, String> {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        Flags::parse("test", &args, KNOWN).map_err(|e| e.message)
    }

    #[test]
    fn accepts_go_flag_spellings() -> Result<(), String> {
        let flags = parse(&["-on", "--path", "/a=b"])?;
        assert_eq!(flags.switch("on", false), Ok(true));
        assert_eq!(flags.text("path"), Some("/a=b"));
        let flags = parse(&["--on=false", "-path=/x", "--path=/y"])?;
        assert_eq!(flags.switch("on", true), Ok(false));
        assert_eq!(flags.text("path"), Some("/y"), "the last value wins");
        Ok(())
    }

    #[test]
    fn absent_flags_keep_their_defaults() -> Result<(), String> {
        let flags = parse(&[])?;
        assert_eq!(flags.switch("on", true), Ok(true));
        assert_eq!(flags.text("path"), None);
        Ok(())
    }

    #[test]
    fn refuses_what_it_does_not_understand() {
        assert_eq!(
            parse(&["--of"]).err().as_deref(),
            Some("unknown flag --of; known flags: --on, --path")
        );
        assert_eq!(
            parse(&["on"]).err().as_deref(),
            Some("unexpected argument \"on\": expected a flag such as --name=value")
        );
        assert_eq!(
            parse(&["--path"]).err().as_deref(),
            Some("flag --path needs a value")
        );
        assert_eq!(
            parse(&["---on"]).err().as_deref(),
            Some("unexpected argument \"---on\": expected a flag such as --name=value")
        );
        assert!(parse(&["--", "x"]).is_err());
        assert!(parse(&["--on", "--"]).is_ok());
    }

    #[test]
    fn a_switch_with_a_bad_value_is_an_error() -> Result<(), String> {
        let flags = parse(&["--on=yes"])?;
        assert_eq!(
            flags.switch("on", false).map_err(|e| e.message),
            Err("flag --on wants true or false, not \"yes\"".to_string())
        );
        Ok(())
    }

    #[test]
    fn a_plugin_without_flags_says_so() {
        let args = vec!["--x".to_string()];
        let err = Flags::parse("env", &args, &[]).err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("job plugin env: unknown flag --x: this plugin takes no arguments")
        );
    }
}
