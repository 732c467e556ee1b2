//! Any text through the stylesheet parser; a parsed stylesheet must print and
//! parse back to itself. Nothing may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weft::lang::stylesheet::parse;

fuzz_target!(|src: &str| {
    if let Ok(sheet) = parse(src) {
        let again = parse(&sheet.to_string()).expect("printed stylesheet parses");
        assert_eq!(sheet, again);
    }
});
