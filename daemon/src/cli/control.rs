//! `weft cancel`, `weft answer` and `weft questions`: act on runs in the
//! daemon (started when it is not running).

use super::daemon::message;
use super::exit::{self, CliError, CliResult, EXIT_OK};
use super::{AnswerArgs, CancelArgs, QuestionsArgs};
use crate::ipc::client::{Client, ClientError};
use crate::ipc::protocol::{AnswerBy, QuestionAnswer, QuestionList, RunCancel};

/// Runs `body` with a client of the daemon (started when not running).
fn with_client<F, Fut>(body: F) -> CliResult
where
    F: FnOnce(Client) -> Fut,
    Fut: std::future::Future<Output = CliResult>,
{
    let home = super::home()?;
    super::block_on(async {
        let client = super::daemon::connect(&home)
            .await
            .map_err(|e| CliError::Usage(format!("cannot reach weftd: {e}")))?;
        body(client).await
    })
}

/// The daemon's refusal (its message) or the failure to ask it.
fn refused(e: &ClientError) -> CliError {
    CliError::Usage(message(e))
}

/// `weft cancel RUN`.
pub fn cancel(args: &CancelArgs) -> CliResult {
    with_client(|client| async move {
        let done = client
            .call(RunCancel {
                run: args.run.clone(),
            })
            .await
            .map_err(|e| refused(&e))?;
        println!(
            "cancelling run {} (it was {})",
            done.run_id,
            done.status.as_str()
        );
        exit::code(EXIT_OK)
    })
}

/// `weft answer RUN`: answers the run's open question (or the one given
/// with `--question`).
pub fn answer(args: &AnswerArgs) -> CliResult {
    let by = match (&args.key, &args.label, &args.text) {
        (Some(k), None, None) => AnswerBy::Key(k.clone()),
        (None, Some(l), None) => AnswerBy::Label(l.clone()),
        (None, None, Some(t)) => AnswerBy::Text(t.clone()),
        _ => {
            return Err(CliError::usage(
                "give exactly one of --key, --label or --text",
            ));
        }
    };
    with_client(|client| async move {
        let question = match &args.question {
            Some(id) => id.clone(),
            None => {
                let open = client
                    .call(QuestionList {
                        run: Some(args.run.clone()),
                        pending_only: true,
                    })
                    .await
                    .map_err(|e| refused(&e))?;
                match open.as_slice() {
                    [one] => one.id.clone(),
                    [] => {
                        return Err(CliError::Usage(format!(
                            "run {} has no open question",
                            args.run
                        )));
                    }
                    many => {
                        let mut message = format!(
                            "run {} has {} open questions; pick one with --question:",
                            args.run,
                            many.len()
                        );
                        for q in many {
                            message.push_str(&format!("\n  {}  {}: {}", q.id, q.node_id, q.text));
                        }
                        return Err(CliError::Usage(message));
                    }
                }
            }
        };
        let record = match client
            .call(QuestionAnswer {
                question,
                answer: by,
            })
            .await
        {
            Ok(record) => record,
            Err(e) if e.is(crate::model::Code::QuestionClosed) => {
                return Err(CliError::AnswerClosed(message(&e)));
            }
            Err(e) => return Err(refused(&e)),
        };
        if args.json {
            println!("{}", serde_json::to_string(&record).unwrap_or_default());
        } else {
            println!(
                "answered {} ({}): {}",
                record.node_id,
                record.text,
                record.answer.map(|a| a.to_string()).unwrap_or_default()
            );
        }
        exit::code(EXIT_OK)
    })
}

/// `weft questions [RUN]`: the open questions.
pub fn questions(args: &QuestionsArgs) -> CliResult {
    with_client(|client| async move {
        let list = client
            .call(QuestionList {
                run: args.run.clone(),
                pending_only: !args.all,
            })
            .await
            .map_err(|e| refused(&e))?;
        if args.json {
            println!(
                "{}",
                serde_json::to_string(&list).unwrap_or_else(|_| "[]".into())
            );
            return exit::code(EXIT_OK);
        }
        if list.is_empty() {
            println!("no open questions");
        }
        for q in &list {
            println!(
                "{}  run {}  {}@{}  {}",
                q.id, q.run_id, q.node_id, q.visit, q.text
            );
            if let Some(permission) = &q.permission {
                // What the agent wants to touch and run, before its options.
                println!("    {}", permission.summary());
                if let Some(command) = &permission.command {
                    let line = command.lines().next().unwrap_or_default();
                    let more = if command.lines().nth(1).is_some() {
                        " …"
                    } else {
                        ""
                    };
                    println!("    $ {}{more}", crate::util::text::truncate(line, 200));
                }
            }
            for (i, option) in q.options.iter().enumerate() {
                match q.permission.as_ref().and_then(|p| p.options.get(i)) {
                    Some(choice) => println!("    {option}  ({})", choice.kind),
                    None => println!("    {option}"),
                }
            }
            if q.freeform {
                println!("    (or any text)");
            }
        }
        exit::code(EXIT_OK)
    })
}
