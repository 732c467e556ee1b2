//! Any text through the condition parser and, when it parses, the evaluator
//! and a print/re-parse round trip. Nothing may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weft::lang::condition::{Env, parse};

fuzz_target!(|src: &str| {
    if let Ok(cond) = parse(src) {
        let context = serde_json::Map::new();
        let env = Env { outcome: "succeeded", preferred_label: "", context: &context };
        let first = cond.evaluate(&env);
        let reparsed = parse(&cond.to_string()).expect("printed condition parses");
        assert_eq!(first, reparsed.evaluate(&env));
    }
});
