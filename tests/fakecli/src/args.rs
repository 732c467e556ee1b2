//! Which CLI we are (from argv[0]) and whether the arguments are those a
//! headless run of it needs. A missing required flag exits 2 with a
//! message naming it, so a test sees at once what the caller forgot.

use std::path::Path;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    Claude,
    Codex,
    Gemini,
}

impl Flavor {
    pub fn name(self) -> &'static str {
        match self {
            Flavor::Claude => "claude",
            Flavor::Codex => "codex",
            Flavor::Gemini => "gemini",
        }
    }

    /// From the file name the binary was started under (a symlink named
    /// `claude`, `codex` or `gemini`, with or without `.exe`), else from
    /// `WEFT_FAKECLI_AS`.
    pub fn detect(argv0: &str, fallback: Option<&str>) -> Option<Flavor> {
        let stem = Path::new(argv0)
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        let by_name = |name: &str| match name {
            "claude" => Some(Flavor::Claude),
            "codex" => Some(Flavor::Codex),
            "gemini" => Some(Flavor::Gemini),
            _ => None,
        };
        by_name(stem).or_else(|| fallback.and_then(by_name))
    }
}

/// What the arguments asked for.
#[derive(Debug)]
pub struct Invocation {
    pub prompt: String,
    pub model: Option<String>,
    /// The session resumed (claude and gemini `--resume <id>`, codex
    /// `exec resume <id>`).
    pub resume: Option<String>,
}

/// Claude flags that take a value (so their value is not the prompt).
const CLAUDE_VALUED: &[&str] = &[
    "--output-format",
    "--input-format",
    "--permission-mode",
    "--model",
    "--fallback-model",
    "--allowedTools",
    "--allowed-tools",
    "--disallowedTools",
    "--disallowed-tools",
    "--max-turns",
    "--max-budget-usd",
    "--add-dir",
    "--mcp-config",
    "--append-system-prompt",
    "--system-prompt",
    "--resume",
    "-r",
    "--settings",
    "--setting-sources",
    "--json-schema",
    "--session-id",
];

/// Codex `exec` flags that take a value.
const CODEX_VALUED: &[&str] = &[
    "-m",
    "--model",
    "-C",
    "--cd",
    "-s",
    "--sandbox",
    "-c",
    "--config",
    "-p",
    "--profile",
    "--add-dir",
    "--output-schema",
    "-o",
    "--output-last-message",
    "--color",
    "--local-provider",
    "-i",
    "--image",
];

/// Gemini flags that take a value.
const GEMINI_VALUED: &[&str] = &[
    "-p",
    "--prompt",
    "-o",
    "--output-format",
    "-m",
    "--model",
    "--approval-mode",
    "--include-directories",
    "-e",
    "--extensions",
    "--allowed-mcp-server-names",
    "-r",
    "--resume",
    "--session-id",
    "--policy",
];

/// Flags and values (`--flag value` or `--flag=value`) and positionals
/// (everything after `--` is positional).
struct Parsed {
    flags: Vec<(String, Option<String>)>,
    positionals: Vec<String>,
}

impl Parsed {
    fn new(args: &[String], valued: &[&str]) -> Parsed {
        let mut parsed = Parsed {
            flags: Vec::new(),
            positionals: Vec::new(),
        };
        let mut rest = args.iter();
        while let Some(arg) = rest.next() {
            if arg == "--" {
                parsed.positionals.extend(rest.by_ref().cloned());
                break;
            }
            if arg.starts_with('-') && arg.len() > 1 {
                if let Some((flag, value)) = arg.split_once('=') {
                    parsed.flags.push((flag.to_owned(), Some(value.to_owned())));
                } else if valued.contains(&arg.as_str()) {
                    parsed.flags.push((arg.clone(), rest.next().cloned()));
                } else {
                    parsed.flags.push((arg.clone(), None));
                }
            } else {
                parsed.positionals.push(arg.clone());
            }
        }
        parsed
    }

    fn has(&self, names: &[&str]) -> bool {
        self.flags.iter().any(|(f, _)| names.contains(&f.as_str()))
    }

    fn value(&self, names: &[&str]) -> Option<&str> {
        self.flags
            .iter()
            .rev()
            .find(|(f, _)| names.contains(&f.as_str()))
            .and_then(|(_, v)| v.as_deref())
    }
}

/// Checks the arguments (without argv[0]) of a headless run; `Err` is the
/// message for stderr.
pub fn check(flavor: Flavor, args: &[String], cwd: &Path) -> Result<Invocation, String> {
    match flavor {
        Flavor::Claude => {
            let parsed = Parsed::new(args, CLAUDE_VALUED);
            if !parsed.has(&["-p", "--print"]) {
                return Err("claude: missing -p/--print (headless mode)".to_owned());
            }
            if parsed.value(&["--output-format"]) != Some("stream-json") {
                return Err("claude: missing --output-format stream-json".to_owned());
            }
            if !parsed.has(&["--verbose"]) {
                return Err(
                    "Error: When using --print, --output-format=stream-json requires --verbose"
                        .to_owned(),
                );
            }
            let prompt = parsed.positionals.last().cloned().unwrap_or_default();
            if prompt.is_empty() {
                return Err("claude: no prompt (this fake does not read stdin)".to_owned());
            }
            Ok(Invocation {
                prompt,
                model: parsed.value(&["--model"]).map(str::to_owned),
                resume: parsed.value(&["--resume", "-r"]).map(str::to_owned),
            })
        }
        Flavor::Codex => {
            if args.first().map(String::as_str) != Some("exec") {
                return Err("codex: the first argument must be `exec`".to_owned());
            }
            let parsed = Parsed::new(&args[1..], CODEX_VALUED);
            if !parsed.has(&["--json", "--experimental-json"]) {
                return Err("codex exec: missing --json".to_owned());
            }
            if !parsed.has(&["--skip-git-repo-check", "--yolo"]) && !in_git_repo(cwd) {
                return Err(
                    "Not inside a trusted directory and --skip-git-repo-check was not specified."
                        .to_owned(),
                );
            }
            // `exec resume <id> [prompt]`: a subcommand, its flags before it.
            let resume = match parsed.positionals.as_slice() {
                [first, id, _, ..] if first == "resume" => Some(id.clone()),
                [first, ..] if first == "resume" => {
                    return Err("codex exec resume: give the session id and a prompt".to_owned());
                }
                _ => None,
            };
            let prompt = parsed.positionals.last().cloned().unwrap_or_default();
            if prompt.is_empty() || prompt == "-" {
                return Err("codex exec: no prompt (this fake does not read stdin)".to_owned());
            }
            Ok(Invocation {
                prompt,
                model: parsed.value(&["-m", "--model"]).map(str::to_owned),
                resume,
            })
        }
        Flavor::Gemini => {
            let parsed = Parsed::new(args, GEMINI_VALUED);
            let prompt = parsed.value(&["-p", "--prompt"]).unwrap_or_default();
            if prompt.is_empty() {
                return Err("gemini: missing -p/--prompt <text> (headless mode)".to_owned());
            }
            if parsed.value(&["-o", "--output-format"]) != Some("stream-json") {
                return Err("gemini: missing -o stream-json".to_owned());
            }
            Ok(Invocation {
                prompt: prompt.to_owned(),
                model: parsed.value(&["-m", "--model"]).map(str::to_owned),
                resume: parsed.value(&["-r", "--resume"]).map(str::to_owned),
            })
        }
    }
}

fn in_git_repo(cwd: &Path) -> bool {
    cwd.ancestors().any(|dir| dir.join(".git").exists())
}
