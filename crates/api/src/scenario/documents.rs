//! Splitting one file's text into YAML documents, each with where it starts.

use std::path::Path;

use serde::Deserialize;
use serde_yaml_ng::Value;

use super::{LoadError, Source};

/// One parsed YAML document and where it came from.
pub(super) struct RawDocument {
    /// File, 1-based document number and starting line.
    pub(super) source: Source,
    /// The document's content; `Null` for an empty document.
    pub(super) value: Value,
}

/// Parses every document of `text`; a syntax error is reported with its document and line.
pub(super) fn split(file: &Path, text: &str) -> Result<Vec<RawDocument>, LoadError> {
    let mut values = Vec::new();
    for (index, document) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let yaml_error = |line: Option<usize>, message: String| LoadError {
            source: Some(Source {
                file: file.to_path_buf(),
                document: index + 1,
                line,
            }),
            path: None,
            object: None,
            field: None,
            message,
        };
        let mut value = Value::deserialize(document).map_err(|e| {
            yaml_error(e.location().map(|l| l.line()), format!("invalid YAML: {e}"))
        })?;
        // `kubectl apply` honours YAML merge keys (`<<: *base`), so scenarios may use them.
        value
            .apply_merge()
            .map_err(|e| yaml_error(None, format!("invalid YAML merge key (<<): {e}")))?;
        values.push(value);
    }
    // The scan below is only a guess at where the parser split the text; a guess that
    // disagrees with the parser on the number of documents would point at wrong lines.
    let starts = document_starts(text);
    let starts_agree = starts.len() == values.len();
    Ok(values
        .into_iter()
        .enumerate()
        .map(|(index, value)| RawDocument {
            source: Source {
                file: file.to_path_buf(),
                document: index + 1,
                line: if starts_agree {
                    starts.get(index).copied()
                } else {
                    None
                },
            },
            value,
        })
        .collect())
}

/// 1-based first line of each document: an explicit `---` marker, or the first content line
/// of a document that starts without one (the first document, or one after a `...` marker).
/// YAML forbids `---` and `...` at the start of a line inside content, so a line scan suffices.
fn document_starts(text: &str) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut in_document = false;
    for (index, line) in text.lines().enumerate() {
        let line = line.strip_prefix('\u{feff}').unwrap_or(line);
        if is_marker(line, "---") {
            starts.push(index + 1);
            in_document = true;
        } else if is_marker(line, "...") {
            in_document = false;
        } else if !in_document && is_content(line) {
            starts.push(index + 1);
            in_document = true;
        }
    }
    starts
}

fn is_marker(line: &str, marker: &str) -> bool {
    line.strip_prefix(marker)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t']))
}

/// Comments, blank lines and directives (`%YAML`) do not open a document.
fn is_content(line: &str) -> bool {
    let trimmed = line.trim();
    !trimmed.is_empty() && !trimmed.starts_with('#') && !line.starts_with('%')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_follow_markers_and_skip_leading_comments() {
        let text = "# header\n\na: 1\n---\nb: 2\n--- \n---\nc: |\n  x\n...\nd: 4\n";
        assert_eq!(document_starts(text), vec![3, 4, 6, 7, 11]);
    }

    #[test]
    fn lines_are_given_when_the_scan_agrees_with_the_parser() {
        let docs = split(Path::new("f.yaml"), "---\na: 1\n---\n# c\nb: 2\n").unwrap_or_default();
        let lines: Vec<_> = docs.iter().map(|d| d.source.line).collect();
        assert_eq!(lines, vec![Some(1), Some(3)]);
    }

    #[test]
    fn syntax_errors_name_document_and_line() {
        let err = split(Path::new("f.yaml"), "a: 1\n---\nb: [1,\nc: 2\n").err();
        let source = err.and_then(|e| e.source);
        assert_eq!(source.as_ref().map(|s| s.document), Some(2));
        assert!(source.and_then(|s| s.line).is_some());
    }
}
