//! Loading never panics: random text, random bytes and cut-off or altered valid scenarios all
//! give `Ok` or `Err`.

mod common;

use std::path::Path;

use proptest::prelude::*;
use volcano_api::scenario::load_str;

fn load(text: &str) {
    let _ = load_str(Path::new("p.yaml"), text);
}

/// The longest prefix of `text` at most `len` bytes long that ends on a character boundary.
fn prefix(text: &str, len: usize) -> &str {
    let mut end = len.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.get(..end).unwrap_or_default()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_text_never_panics(text in "\\PC{0,300}") {
        load(&text);
    }

    #[test]
    fn random_yaml_like_text_never_panics(text in "([a-zA-Z:{}\\[\\],\\-#&*!|>'\" \n0-9]|---\n|  ){0,120}") {
        load(&text);
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        load(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn truncated_scenario_never_panics(len in 0..=common::VALID.len()) {
        load(prefix(common::VALID, len));
    }

    #[test]
    fn altered_scenario_never_panics(
        at in 0..=common::VALID.len(),
        cut in 0usize..40,
        insert in "[-a-z0-9:{}\\[\\] \n]{0,8}",
    ) {
        let head = prefix(common::VALID, at);
        let tail = common::VALID.get(prefix(common::VALID, at + cut).len()..).unwrap_or_default();
        load(&format!("{head}{insert}{tail}"));
    }
}
