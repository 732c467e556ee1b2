//! Deep links: `weft://PATH` names one place in the desktop app (a screen,
//! a run, a stage visit and its tab, a question). The app's address hash
//! is `#/` + the same PATH, so the app opens a link by setting its hash.
//!
//! The grammar (the UI reads the same one; docs/app.md, "Deep links"):
//!
//! ```text
//! runs | gates | launch | spending | retros     a screen
//! run/RUN                                       the run screen
//! run/RUN/BAR                                   BAR: timeline events retro cost
//! run/RUN/stage/NODE                            the node's latest visit
//! run/RUN/stage/NODE@VISIT                      VISIT: decimal >= 1
//! run/RUN/stage/NODE@VISIT/TAB                  TAB: transcript output files
//!                                                    artifacts routing context
//! run/RUN/question/QID                          the run at that question
//! ```
//!
//! Every segment is percent-encoded when it holds anything but
//! `[A-Za-z0-9._~-]`; RUN and QID are ids (ASCII letters, digits, `-`, `_`,
//! at most [`MAX_ID_BYTES`]). A link comes from outside (a command line, a
//! desktop launcher, another process on the socket), so [`DeepLink::parse`]
//! checks all of it and says what is wrong; the path it keeps is the
//! canonical one, the same for every spelling of one place.
//!
//! It lives in the model layer because both weftd (a gate notification's
//! click) and the app read it; [`crate::views`] re-exports it.

use serde::{Deserialize, Deserializer, Serialize};
use ts_rs::TS;

/// What starts every link.
pub const SCHEME: &str = "weft://";

/// The longest link accepted, in bytes.
pub const MAX_LINK_BYTES: usize = 2048;

/// The longest run or question id accepted, in bytes.
pub const MAX_ID_BYTES: usize = 128;

/// The screens a link can name by themselves.
pub const SCREENS: [&str; 5] = ["runs", "gates", "launch", "spending", "retros"];

/// The run screen's bar tabs (`run/RUN/BAR`).
pub const BAR_TABS: [&str; 4] = ["timeline", "events", "retro", "cost"];

/// A stage visit's tabs (`run/RUN/stage/NODE@VISIT/TAB`).
pub const STAGE_TABS: [&str; 6] = [
    "transcript",
    "output",
    "files",
    "artifacts",
    "routing",
    "context",
];

/// A place in the desktop app: `weft://` + [`DeepLink::path`]. Only
/// [`DeepLink::parse`] and the constructors make one, so the path is always
/// canonical: the field is private, and one read from JSON
/// (`{"path": "..."}`) goes through [`DeepLink::parse`] too.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, TS)]
pub struct DeepLink {
    /// The canonical PATH, without `weft://`; the UI's hash is `#/` + it.
    path: String,
}

impl<'de> Deserialize<'de> for DeepLink {
    /// The same JSON shape as serialized, but a path that does not parse
    /// is an error, and one that does is kept in its canonical spelling.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Unchecked {
            path: String,
        }
        let unchecked = Unchecked::deserialize(deserializer)?;
        DeepLink::parse(&unchecked.path).map_err(serde::de::Error::custom)
    }
}

/// The place a link names, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Place<'a> {
    Screen(&'a str),
    Run {
        run: &'a str,
        bar: Option<&'a str>,
    },
    Stage {
        run: &'a str,
        node: &'a str,
        visit: Option<u32>,
        tab: Option<&'a str>,
    },
    Question {
        run: &'a str,
        question: &'a str,
    },
}

impl DeepLink {
    /// Reads a link: `weft://PATH` or PATH alone. The scheme's case does
    /// not matter and one trailing `/` is dropped (desktop launchers add
    /// one); the legacy UI paths (`runs/RUN`, `runs/RUN/question/QID`,
    /// `runs/RUN/node/NODE`) read as their new forms. Anything else that
    /// does not follow the grammar is an error saying why.
    pub fn parse(text: &str) -> Result<DeepLink, String> {
        if text.len() > MAX_LINK_BYTES {
            return Err(format!(
                "the link is {} bytes; a link is at most {MAX_LINK_BYTES}",
                text.len()
            ));
        }
        let path = match text.get(SCHEME.len()..) {
            Some(rest) if DeepLink::is_link(text) => rest,
            _ if text.contains("://") => {
                return Err(format!("`{}` is not a weft:// link", shown(text)));
            }
            _ => text,
        };
        let path = path.strip_suffix('/').unwrap_or(path);
        if path.is_empty() {
            return Err("the link names no place (expected e.g. weft://runs)".into());
        }
        let raw: Vec<&str> = path.split('/').collect();
        let mut decoded = Vec::with_capacity(raw.len());
        for (i, segment) in raw.iter().enumerate() {
            // A stage segment keeps its `@VISIT` apart: `@` is the
            // separator there, and a node's own `@` arrives as %40.
            let is_stage = i == 3 && matches!(raw.get(2), Some(&"stage"));
            let (name, visit) = if is_stage {
                node_and_visit(segment)?
            } else {
                (*segment, None)
            };
            decoded.push((decode(name)?, visit));
        }
        let words: Vec<&str> = decoded.iter().map(|(s, _)| s.as_str()).collect();
        let visit_of = |i: usize| decoded.get(i).and_then(|(_, v)| *v);
        let place = match words.as_slice() {
            [screen] if SCREENS.contains(screen) => Place::Screen(screen),
            ["run" | "runs", run] => Place::Run { run, bar: None },
            ["run", run, bar] => Place::Run {
                run,
                bar: Some(bar),
            },
            ["run", run, "stage", node] => Place::Stage {
                run,
                node,
                visit: visit_of(3),
                tab: None,
            },
            ["run", run, "stage", node, tab] => {
                let Some(visit) = visit_of(3) else {
                    return Err(format!(
                        "the stage tab `{}` needs a visit: stage/NODE@VISIT/TAB",
                        shown(tab)
                    ));
                };
                Place::Stage {
                    run,
                    node,
                    visit: Some(visit),
                    tab: Some(tab),
                }
            }
            ["runs", run, "node", node] => Place::Stage {
                run,
                node,
                visit: None,
                tab: None,
            },
            ["run" | "runs", run, "question", question] => Place::Question { run, question },
            _ => {
                return Err(format!(
                    "`{}` is not a place in Weft; a link is weft://runs (or gates, launch, \
                     spending, retros), weft://run/RUN, weft://run/RUN/BAR, \
                     weft://run/RUN/stage/NODE[@VISIT[/TAB]] or weft://run/RUN/question/QID",
                    shown(path)
                ));
            }
        };
        place.link()
    }

    /// A screen by itself: one of [`SCREENS`].
    pub fn screen(name: &str) -> Result<DeepLink, String> {
        Place::Screen(name).link()
    }

    /// The run screen, following the run.
    pub fn run(run: &str) -> Result<DeepLink, String> {
        Place::Run { run, bar: None }.link()
    }

    /// The run screen at one of its bar tabs ([`BAR_TABS`]).
    pub fn run_bar(run: &str, bar: &str) -> Result<DeepLink, String> {
        Place::Run {
            run,
            bar: Some(bar),
        }
        .link()
    }

    /// A stage: its latest visit without `visit`; a tab ([`STAGE_TABS`])
    /// needs a visit.
    pub fn stage(
        run: &str,
        node: &str,
        visit: Option<u32>,
        tab: Option<&str>,
    ) -> Result<DeepLink, String> {
        Place::Stage {
            run,
            node,
            visit,
            tab,
        }
        .link()
    }

    /// The run screen at a question (what a gate notification opens).
    pub fn question(run: &str, question: &str) -> Result<DeepLink, String> {
        Place::Question { run, question }.link()
    }

    /// Whether `text` starts with `weft://` (in any case): meant as a
    /// link, whether or not the rest parses.
    #[must_use]
    pub fn is_link(text: &str) -> bool {
        text.get(..SCHEME.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(SCHEME))
    }

    /// The canonical PATH, without `weft://`; the UI's hash is `#/` + it.
    #[must_use]
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The link as a URL: `weft://` + the path.
    #[must_use]
    pub fn url(&self) -> String {
        format!("{SCHEME}{}", self.path)
    }

    /// Where the app's arguments (without the program name) ask it to
    /// open: a `weft://` link, or the older `--run RUN --question QID`
    /// (either order, also `--run=RUN`; both needed). `Ok(None)` when they
    /// name no place; an error for a link that does not parse.
    pub fn from_args<I, S>(args: I) -> Result<Option<DeepLink>, String>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut run = None;
        let mut question = None;
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let arg = arg.as_ref();
            if DeepLink::is_link(arg) {
                return DeepLink::parse(arg).map(Some);
            }
            let (flag, inline) = match arg.split_once('=') {
                Some((flag, value)) => (flag, Some(value.to_string())),
                None => (arg, None),
            };
            let slot = match flag {
                "--run" => &mut run,
                "--question" => &mut question,
                _ => continue,
            };
            let value = inline.or_else(|| args.next().map(|v| v.as_ref().to_string()));
            *slot = value.filter(|v| !v.is_empty() && !v.starts_with("--"));
        }
        match (run, question) {
            (Some(run), Some(question)) => DeepLink::question(&run, &question).map(Some),
            _ => Ok(None),
        }
    }
}

impl std::fmt::Display for DeepLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.url())
    }
}

impl Place<'_> {
    /// Checks every part and writes the canonical path.
    fn link(&self) -> Result<DeepLink, String> {
        let path = match *self {
            Place::Screen(name) => {
                if !SCREENS.contains(&name) {
                    return Err(format!(
                        "`{}` is not a screen; expected one of {}",
                        shown(name),
                        SCREENS.join(", ")
                    ));
                }
                name.to_string()
            }
            Place::Run { run, bar } => {
                check_id("run", run)?;
                match bar {
                    None => format!("run/{run}"),
                    Some(bar) => {
                        if !BAR_TABS.contains(&bar) {
                            return Err(format!(
                                "`{}` is not a run bar tab; expected one of {}",
                                shown(bar),
                                BAR_TABS.join(", ")
                            ));
                        }
                        format!("run/{run}/{bar}")
                    }
                }
            }
            Place::Stage {
                run,
                node,
                visit,
                tab,
            } => {
                check_id("run", run)?;
                check_node(node)?;
                let mut path = format!("run/{run}/stage/{}", encode(node));
                if let Some(visit) = visit {
                    if visit == 0 {
                        return Err("a visit is counted from 1".into());
                    }
                    path.push_str(&format!("@{visit}"));
                }
                if let Some(tab) = tab {
                    if visit.is_none() {
                        return Err(format!(
                            "the stage tab `{}` needs a visit: stage/NODE@VISIT/TAB",
                            shown(tab)
                        ));
                    }
                    if !STAGE_TABS.contains(&tab) {
                        return Err(format!(
                            "`{}` is not a stage tab; expected one of {}",
                            shown(tab),
                            STAGE_TABS.join(", ")
                        ));
                    }
                    path.push('/');
                    path.push_str(tab);
                }
                path
            }
            Place::Question { run, question } => {
                check_id("run", run)?;
                check_id("question", question)?;
                format!("run/{run}/question/{question}")
            }
        };
        if path.len() + SCHEME.len() > MAX_LINK_BYTES {
            return Err(format!(
                "the link would be {} bytes; a link is at most {MAX_LINK_BYTES}",
                path.len() + SCHEME.len()
            ));
        }
        Ok(DeepLink { path })
    }
}

/// A run or question id: 1 to [`MAX_ID_BYTES`] ASCII letters, digits, `-`
/// and `_`.
fn check_id(what: &str, id: &str) -> Result<(), String> {
    if id.is_empty() {
        return Err(format!("the {what} id is empty"));
    }
    if id.len() > MAX_ID_BYTES {
        return Err(format!(
            "the {what} id is {} bytes; an id is at most {MAX_ID_BYTES}",
            id.len()
        ));
    }
    if !id
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(format!(
            "`{}` is not a {what} id (ASCII letters, digits, `-` and `_`)",
            shown(id)
        ));
    }
    Ok(())
}

/// A node id may be any DOT id, but not empty and without control or
/// format characters (nothing a workflow names a node with, and nothing a
/// link should carry into the window: a right-to-left override or a
/// zero-width character makes one id look like another).
fn check_node(node: &str) -> Result<(), String> {
    if node.is_empty() {
        return Err("the node id is empty".into());
    }
    if node.chars().any(char::is_control) {
        return Err(format!(
            "the node id `{}` holds a control character",
            shown(node)
        ));
    }
    if let Some(c) = node.chars().find(|c| is_format(*c)) {
        return Err(format!(
            "the node id `{}` holds the invisible format character U+{:04X}",
            shown(node),
            u32::from(c)
        ));
    }
    Ok(())
}

/// Unicode's format characters (general category Cf, Unicode 15): soft
/// hyphen, bidirectional marks, overrides and isolates, zero-width
/// characters, the byte order mark, tags and the like.
const FORMAT_CHARACTERS: [(u32, u32); 21] = [
    (0x00AD, 0x00AD),
    (0x0600, 0x0605),
    (0x061C, 0x061C),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x180E, 0x180E),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x2064),
    (0x2066, 0x206F),
    (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
];

fn is_format(c: char) -> bool {
    let c = u32::from(c);
    FORMAT_CHARACTERS
        .iter()
        .any(|&(first, last)| (first..=last).contains(&c))
}

/// `NODE[@VISIT]`, as a link's stage segment and `weft open --stage`
/// write it: the text after the last `@` is the visit, so a node id that
/// holds `@` itself needs an explicit visit (`a@b@1`). The node is
/// returned as written (a link's is still percent-encoded); the visit is
/// decimal digits, at least 1 (no sign, no spaces).
pub fn node_and_visit(text: &str) -> Result<(&str, Option<u32>), String> {
    match text.rsplit_once('@') {
        Some((node, visit)) => Ok((node, Some(parse_visit(visit)?))),
        None => Ok((text, None)),
    }
}

/// `VISIT` of `NODE@VISIT`: decimal digits, at least 1.
fn parse_visit(text: &str) -> Result<u32, String> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "the visit `{}` is not a number (NODE@VISIT, VISIT from 1)",
            shown(text)
        ));
    }
    match text.parse::<u32>() {
        Ok(0) => Err("a visit is counted from 1".into()),
        Ok(visit) => Ok(visit),
        Err(_) => Err(format!("the visit `{}` is too large", shown(text))),
    }
}

/// Whether `b` is left as it is in a segment (encodeURIComponent also
/// leaves `!'()*`, which are read but never written).
fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// A segment with its `%XX` escapes decoded; raw bytes outside the
/// unreserved set (and encodeURIComponent's `!'()*`) are refused, as are
/// bad escapes and bytes that are not UTF-8.
fn decode(segment: &str) -> Result<String, String> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .filter(|_| bytes[i + 1].is_ascii_hexdigit() && bytes[i + 2].is_ascii_hexdigit());
            let Some(value) = hex else {
                return Err(format!(
                    "`{}` has a `%` not followed by two hex digits",
                    shown(segment)
                ));
            };
            out.push(value);
            i += 3;
        } else if unreserved(b) || matches!(b, b'!' | b'\'' | b'(' | b')' | b'*') {
            out.push(b);
            i += 1;
        } else {
            return Err(format!(
                "`{}` holds a character that must be percent-encoded in a link",
                shown(segment)
            ));
        }
    }
    String::from_utf8(out).map_err(|_| format!("`{}` does not decode to UTF-8", shown(segment)))
}

/// `segment` percent-encoded: every byte outside the unreserved set as
/// `%XX` (upper case), as the UI's encodeURIComponent does.
fn encode(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        if unreserved(b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Hostile text as an error shows it: at most 80 characters, control
/// characters escaped.
fn shown(text: &str) -> String {
    const MAX: usize = 80;
    let mut out: String = text
        .chars()
        .take(MAX)
        .flat_map(char::escape_debug)
        .collect();
    if text.chars().nth(MAX).is_some() {
        out.push('…');
    }
    out
}
