//! Whatever a scenario file holds (a truncated file, stray bytes, swapped characters), loading
//! it and scheduling what loads never panics: the input is either rejected with an error or
//! scheduled.

use proptest::prelude::*;
use volcano_fuzz::scenario;

const SCENARIOS: &[&str] = &[
    include_str!("../../../examples/quickstart.yaml"),
    include_str!("../../../examples/predicates.yaml"),
    include_str!("../../../examples/out-of-sync.yaml"),
    include_str!("../../../examples/overcommit.yaml"),
];

/// Loads `text`; if it loads, schedules it with its own configuration (or the default).
fn load_and_schedule(text: &str) {
    scenario(text.as_bytes());
}

fn cut(text: &str, at: usize) -> &str {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    &text[..at]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn truncated_scenarios_never_panic(which in 0..SCENARIOS.len(), at in 0usize..8000) {
        load_and_schedule(cut(SCENARIOS[which], at));
    }

    #[test]
    fn edited_scenarios_never_panic(
        which in 0..SCENARIOS.len(),
        edits in proptest::collection::vec((0usize..8000, prop_oneof![
            Just("0"), Just("-1"), Just("12x"), Just("1e30"), Just(": "), Just("\n"), Just("- "),
            Just("{"), Just("Gi"), Just("99999999999999999999"), Just("m"), Just("\"\""),
        ]), 1..4),
    ) {
        let mut text = SCENARIOS[which].to_string();
        for (at, insert) in edits {
            let at = cut(&text, at).len();
            text.insert_str(at, insert);
        }
        load_and_schedule(&text);
    }

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,400}") {
        load_and_schedule(&text);
    }
}
