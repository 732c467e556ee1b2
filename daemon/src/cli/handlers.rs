//! `weft handlers [--json]`: what each handler is and reads, from the
//! language's own table ([`crate::lang::handlers`]).

use std::fmt::Write as _;

use super::HandlersArgs;
use super::exit::{self, CliResult, EXIT_OK};
use crate::lang::handlers::{HANDLERS, STAGE_ATTRIBUTES};

pub fn run(args: &HandlersArgs) -> CliResult {
    if args.json {
        let json = serde_json::json!({
            "handlers": HANDLERS,
            "stage_attributes": STAGE_ATTRIBUTES,
        });
        println!("{json}");
    } else {
        print!("{}", listing());
    }
    exit::code(EXIT_OK)
}

/// The human listing: a block per handler, then what every stage reads.
fn listing() -> String {
    let mut out = String::new();
    for h in HANDLERS {
        let _ = writeln!(out, "{}  (shape={})", h.name, h.shape);
        let _ = writeln!(out, "  {}", h.summary);
        let _ = writeln!(out, "  type: {}", h.types.join(", "));
        if !h.attributes.is_empty() {
            let _ = writeln!(out, "  reads: {}", h.attributes.join(", "));
        }
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "Every stage (not start or exit) also reads: {}",
        STAGE_ATTRIBUTES.join(", ")
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listing_names_every_handler_with_its_shape_and_type_names() {
        let text = listing();
        for h in HANDLERS {
            assert!(
                text.contains(&format!("{}  (shape={})", h.name, h.shape)),
                "{text}"
            );
            assert!(text.contains(&h.types.join(", ")), "{text}");
        }
        assert!(text.contains("codergen"));
        assert!(text.ends_with(&format!("{}\n", STAGE_ATTRIBUTES.join(", "))));
    }
}
