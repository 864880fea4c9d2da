//! Reading Rust source text just enough to find module paths: comments, string and
//! character literals and `#[cfg(test)]` items blanked, then every `crate::`, `super::`,
//! `self::` path and `pub use` tree, with its line.

/// `text` with comments blanked and the contents of string and character literals blanked,
/// newlines kept, so what is left is code and line numbers still hold.
pub(super) fn clean(text: &[u8]) -> Vec<u8> {
    let mut out = text.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to.min(text.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < text.len() {
        let c = text[i];
        let prev_ident = i > 0 && ident(text[i - 1]);
        if text[i..].starts_with(b"//") {
            let end = text[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(text.len(), |p| i + p);
            blank(&mut out, i, end);
            i = end;
        } else if text[i..].starts_with(b"/*") {
            let mut depth = 0;
            let mut j = i;
            while j < text.len() {
                if text[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if text[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if !prev_ident && (c == b'r' || (c == b'b' && text.get(i + 1) == Some(&b'r'))) {
            // A raw string: r"…", r#"…"#, br"…".
            let mut j = i + if c == b'b' { 2 } else { 1 };
            let hashes = text[j..].iter().take_while(|&&c| c == b'#').count();
            j += hashes;
            if text.get(j) != Some(&b'"') {
                i += 1;
                continue;
            }
            let mut close = vec![b'"'];
            close.extend(std::iter::repeat_n(b'#', hashes));
            let end = text[j + 1..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(text.len(), |p| j + 1 + p);
            blank(&mut out, j + 1, end);
            i = end + close.len();
        } else if c == b'"' {
            let mut j = i + 1;
            while j < text.len() && text[j] != b'"' {
                j += if text[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i + 1, j);
            i = j + 1;
        } else if c == b'\'' {
            // A character literal ('x', '\n', '{'), not a lifetime ('a).
            let end = if text.get(i + 1) == Some(&b'\\') {
                text[i + 2..]
                    .iter()
                    .position(|&c| c == b'\'')
                    .map(|p| i + 2 + p)
            } else {
                let width = text
                    .get(i + 1)
                    .map_or(1, |&b| if b < 0x80 { 1 } else { utf8_width(b) });
                (text.get(i + 1 + width) == Some(&b'\'')).then_some(i + 1 + width)
            };
            match end {
                Some(e) => {
                    blank(&mut out, i + 1, e);
                    i = e + 1;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    out
}

fn utf8_width(first: u8) -> usize {
    match first {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        _ => 2,
    }
}

fn skip_ws(code: &[u8], mut i: usize) -> usize {
    while i < code.len() && code[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

fn word_at(code: &[u8], i: usize) -> Option<(&str, usize)> {
    let start = i;
    let mut j = i;
    while j < code.len() && (code[j].is_ascii_alphanumeric() || code[j] == b'_') {
        j += 1;
    }
    (j > start)
        .then(|| std::str::from_utf8(&code[start..j]).ok())
        .flatten()
        .map(|w| (w, j))
}

/// Reads `#[cfg(test)]` at `i` (spaces allowed); returns the position after it.
fn cfg_test_at(code: &[u8], i: usize) -> Option<usize> {
    let mut j = i;
    for token in ["#", "[", "cfg", "(", "test", ")", "]"] {
        j = skip_ws(code, j);
        if !code[j..].starts_with(token.as_bytes()) {
            return None;
        }
        j += token.len();
    }
    Some(j)
}

/// Blanks every item under `#[cfg(test)]`; returns the names of test-only modules declared
/// here whose code lives in other files (`#[cfg(test)] mod tests;`).
pub(super) fn strip_test_items(code: &mut [u8]) -> Vec<String> {
    let mut test_modules = Vec::new();
    let mut i = 0;
    while i < code.len() {
        let Some(after) = (code[i] == b'#').then(|| cfg_test_at(code, i)).flatten() else {
            i += 1;
            continue;
        };
        // The item: up to a `;` outside braces, or the end of its first brace block.
        let mut j = skip_ws(code, after);
        if let Some(("mod", k)) = word_at(code, j) {
            let k = skip_ws(code, k);
            if let Some((name, k)) = word_at(code, k)
                && code.get(skip_ws(code, k)) == Some(&b';')
            {
                test_modules.push(name.to_string());
            }
        }
        let mut depth = 0usize;
        while j < code.len() {
            match code[j] {
                b'{' => depth += 1,
                b'}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        j += 1;
                        break;
                    }
                }
                b';' if depth == 0 => {
                    j += 1;
                    break;
                }
                _ => {}
            }
            j += 1;
        }
        let end = j.min(code.len());
        for c in &mut code[i..end] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
        i = j;
    }
    test_modules
}

/// A path found in the code.
pub(super) struct FoundPath {
    /// Its segments, from `crate`, `super`, `self` or (in a `use`) a name.
    pub(super) segments: Vec<String>,
    /// The name it brings into scope, for `use` paths (`as` renames count).
    pub(super) leaf: Option<String>,
    /// Whether it is from a `pub use` (a re-export).
    pub(super) public_use: bool,
    /// Line, from 1.
    pub(super) line: usize,
}

/// Every path starting with `crate`, `$crate`, `super` or `self`, and every path of a `pub use`
/// (whose first segment may be a child module's name).
pub(super) fn paths(code: &[u8]) -> Vec<FoundPath> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut line = 1;
    let mut line_at = 0;
    while i < code.len() {
        let c = code[i];
        let boundary = i == 0 || !(code[i - 1].is_ascii_alphanumeric() || code[i - 1] == b'_');
        if !boundary || !(c.is_ascii_alphabetic() || c == b'_') {
            i += 1;
            continue;
        }
        let Some((word, end)) = word_at(code, i) else {
            i += 1;
            continue;
        };
        line += code[line_at..i].iter().filter(|&&c| c == b'\n').count();
        line_at = i;
        let preceded_by_colons = code[..i]
            .iter()
            .rev()
            .find(|c| !c.is_ascii_whitespace())
            .is_some_and(|&c| c == b':');
        if word == "pub" {
            // `pub use` and `pub(crate) use` and the like: its first segment may be a child.
            let mut j = skip_ws(code, end);
            if code.get(j) == Some(&b'(') {
                j = code[j..]
                    .iter()
                    .position(|&c| c == b')')
                    .map_or(j, |p| j + p + 1);
            }
            j = skip_ws(code, j);
            if let Some(("use", k)) = word_at(code, j) {
                let k = skip_ws(code, k);
                let mut found = Vec::new();
                let stop = use_tree(code, k, Vec::new(), &mut found);
                for (segments, leaf) in found {
                    out.push(FoundPath {
                        segments,
                        leaf,
                        public_use: true,
                        line,
                    });
                }
                i = stop;
                continue;
            }
        }
        if !preceded_by_colons && matches!(word, "crate" | "super" | "self") {
            let mut found = Vec::new();
            let stop = use_tree(code, i, Vec::new(), &mut found);
            for (segments, leaf) in found {
                out.push(FoundPath {
                    segments,
                    leaf,
                    public_use: false,
                    line,
                });
            }
            i = stop.max(end);
            continue;
        }
        i = end;
    }
    out
}

/// Reads a path or use tree at `i` under `prefix`, pushing every full path with the name it
/// brings into scope; returns where it ended.
fn use_tree(
    code: &[u8],
    mut i: usize,
    mut prefix: Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) -> usize {
    loop {
        i = skip_ws(code, i);
        if code.get(i) == Some(&b'{') {
            i += 1;
            loop {
                i = skip_ws(code, i);
                match code.get(i) {
                    None => return i,
                    Some(b'}') => return i + 1,
                    Some(b',') => i += 1,
                    Some(_) => {
                        let before = i;
                        i = use_tree(code, i, prefix.clone(), out);
                        if i == before {
                            i += 1;
                        }
                    }
                }
            }
        }
        if code.get(i) == Some(&b'*') {
            out.push((prefix, None));
            return i + 1;
        }
        let Some((word, end)) = word_at(code, i) else {
            if !prefix.is_empty() {
                let leaf = prefix.last().cloned();
                out.push((prefix, leaf));
            }
            return i;
        };
        i = end;
        if word == "self" && !prefix.is_empty() {
            // `a::{self, B}`: the prefix itself.
        } else {
            prefix.push(word.to_string());
        }
        let j = skip_ws(code, i);
        if code[j..].starts_with(b"::") {
            i = j + 2;
            continue;
        }
        let mut leaf = prefix.last().cloned();
        if let Some(("as", k)) = word_at(code, j) {
            let k = skip_ws(code, k);
            if let Some((alias, k)) = word_at(code, k) {
                leaf = Some(alias.to_string());
                i = k;
            }
        }
        out.push((prefix, leaf));
        return i;
    }
}
