//! `weft cancel`, `weft answer` and `weft questions`: act on runs in the
//! daemon (started when it is not running).

use super::{AnswerArgs, CancelArgs, EXIT_OK, EXIT_USAGE, QuestionsArgs};
use crate::ipc::client::{Client, ClientError};
use crate::ipc::protocol::{AnswerBy, QuestionAnswer, QuestionList, RunCancel};

/// Runs `body` with a client of the daemon (started when not running).
fn with_client<F, Fut>(body: F) -> u8
where
    F: FnOnce(Client) -> Fut,
    Fut: std::future::Future<Output = u8>,
{
    let home = match super::home() {
        Ok(h) => h,
        Err(code) => return code,
    };
    super::with_runtime(|| async {
        match super::remote::connect(&home).await {
            Ok(client) => body(client).await,
            Err(e) => {
                eprintln!("error: cannot reach weftd: {e}");
                EXIT_USAGE
            }
        }
    })
}

/// Exit code of `weft answer`: the question was closed already, with
/// another answer (or by its timeout, or its run stopping); the message
/// says what was recorded.
pub const EXIT_ANSWER_CLOSED: u8 = 1;

fn report(e: &ClientError) -> u8 {
    match e {
        ClientError::Rpc(rpc) => eprintln!("error: {}", rpc.message),
        other => eprintln!("error: {other}"),
    }
    EXIT_USAGE
}

/// `weft cancel RUN`.
pub fn cancel(args: &CancelArgs) -> u8 {
    with_client(|client| async move {
        match client
            .call(RunCancel {
                run: args.run.clone(),
            })
            .await
        {
            Ok(done) => {
                println!(
                    "cancelling run {} (it was {})",
                    done.run_id,
                    done.status.as_str()
                );
                EXIT_OK
            }
            Err(e) => report(&e),
        }
    })
}

/// `weft answer RUN`: answers the run's open question (or the one given
/// with `--question`).
pub fn answer(args: &AnswerArgs) -> u8 {
    let by = match (&args.key, &args.label, &args.text) {
        (Some(k), None, None) => AnswerBy::Key(k.clone()),
        (None, Some(l), None) => AnswerBy::Label(l.clone()),
        (None, None, Some(t)) => AnswerBy::Text(t.clone()),
        _ => {
            eprintln!("error: give exactly one of --key, --label or --text");
            return EXIT_USAGE;
        }
    };
    with_client(|client| async move {
        let question = match &args.question {
            Some(id) => id.clone(),
            None => {
                let open = match client
                    .call(QuestionList {
                        run: Some(args.run.clone()),
                        pending_only: true,
                    })
                    .await
                {
                    Ok(q) => q,
                    Err(e) => return report(&e),
                };
                match open.as_slice() {
                    [one] => one.id.clone(),
                    [] => {
                        eprintln!("error: run {} has no open question", args.run);
                        return EXIT_USAGE;
                    }
                    many => {
                        eprintln!(
                            "error: run {} has {} open questions; pick one with --question:",
                            args.run,
                            many.len()
                        );
                        for q in many {
                            eprintln!("  {}  {}: {}", q.id, q.node_id, q.text);
                        }
                        return EXIT_USAGE;
                    }
                }
            }
        };
        match client
            .call(QuestionAnswer {
                question,
                answer: by,
            })
            .await
        {
            Ok(record) => {
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
                EXIT_OK
            }
            Err(e) if e.is(crate::model::Code::QuestionClosed) => {
                report(&e);
                EXIT_ANSWER_CLOSED
            }
            Err(e) => report(&e),
        }
    })
}

/// `weft questions [RUN]`: the open questions.
pub fn questions(args: &QuestionsArgs) -> u8 {
    with_client(|client| async move {
        let list = match client
            .call(QuestionList {
                run: args.run.clone(),
                pending_only: !args.all,
            })
            .await
        {
            Ok(q) => q,
            Err(e) => return report(&e),
        };
        if args.json {
            println!(
                "{}",
                serde_json::to_string(&list).unwrap_or_else(|_| "[]".into())
            );
            return EXIT_OK;
        }
        if list.is_empty() {
            println!("no open questions");
        }
        for q in &list {
            println!(
                "{}  run {}  {}@{}  {}",
                q.id, q.run_id, q.node_id, q.visit, q.text
            );
            for option in &q.options {
                println!("    {option}");
            }
            if q.freeform {
                println!("    (or any text)");
            }
        }
        EXIT_OK
    })
}
