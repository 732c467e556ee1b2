//! Any bytes through the whole loader: UTF-8 check, templates, parser,
//! stylesheet and every validation rule. Nothing may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weft::lang::{LoadOptions, Workflow};

fuzz_target!(|data: &[u8]| {
    let wf = Workflow::from_bytes("fuzz.fabro", data, std::path::Path::new("/nonexistent"), &LoadOptions::default());
    // A parsed graph must print and re-parse.
    if let Some(graph) = &wf.graph {
        let printed = weft::lang::printer::to_dot(graph);
        assert!(weft::lang::parser::parse(&printed).is_ok(), "printed graph does not parse:\n{printed}");
    }
});
