//! JSON-RPC 2.0 as ACP carries it on an agent's stdio: one JSON object per
//! line. Lines are read with a cap ([`MAX_LINE_BYTES`], by
//! [`crate::agent::child_io::Lines`]; a line past it ends the connection:
//! nothing Weft asks for is that large), and a line that is not a JSON-RPC
//! message is kept aside, not fatal: agents and their wrappers sometimes
//! print logs to stdout.

use serde_json::{Map, Value, json};

/// The longest line read from an agent (the official SDK's cap): a whole
/// file written through `fs/write_text_file` is one line.
pub const MAX_LINE_BYTES: usize = 32 * 1024 * 1024;

/// A JSON-RPC id as the agent sent it (a number or a string).
pub type Id = Value;

/// One message from the agent.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// The answer to one of Weft's requests.
    Response {
        id: Id,
        result: Result<Value, RpcError>,
    },
    /// The agent asks Weft something (`fs/*`, `terminal/*`,
    /// `session/request_permission`).
    Request {
        id: Id,
        method: String,
        params: Value,
    },
    /// The agent tells Weft something (`session/update`).
    Notification { method: String, params: Value },
    /// A line that is not a JSON-RPC message, cut for display.
    Garbage(String),
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
}

impl RpcError {
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL: i64 = -32603;
    pub const NOT_FOUND: i64 = -32002;

    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
        }
    }

    pub fn invalid_params(message: impl Into<String>) -> RpcError {
        RpcError::new(Self::INVALID_PARAMS, message)
    }
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

/// One line as a message.
#[must_use]
pub fn parse(line: &[u8]) -> Incoming {
    let garbage = || {
        Incoming::Garbage(crate::util::text::truncate(
            &String::from_utf8_lossy(line),
            500,
        ))
    };
    let Ok(Value::Object(mut message)) = serde_json::from_slice::<Value>(line) else {
        return garbage();
    };
    let method = message
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_string);
    let id = message.remove("id");
    match (method, id) {
        (Some(method), Some(id)) => Incoming::Request {
            id,
            method,
            params: message.remove("params").unwrap_or(Value::Null),
        },
        (Some(method), None) => Incoming::Notification {
            method,
            params: message.remove("params").unwrap_or(Value::Null),
        },
        (None, Some(id)) => {
            let result = match (message.remove("result"), message.remove("error")) {
                (_, Some(error)) => Err(error_of(&error)),
                (Some(result), None) => Ok(result),
                (None, None) => Ok(Value::Null),
            };
            Incoming::Response { id, result }
        }
        (None, None) => garbage(),
    }
}

fn error_of(error: &Value) -> RpcError {
    RpcError {
        code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
        message: error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("(no message)")
            .to_string(),
    }
}

/// A request line (with its newline).
#[must_use]
pub fn request(id: u64, method: &str, params: Value) -> Vec<u8> {
    line(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
}

/// A notification line.
#[must_use]
pub fn notification(method: &str, params: Value) -> Vec<u8> {
    line(json!({"jsonrpc": "2.0", "method": method, "params": params}))
}

/// A response line to the agent's request `id`.
#[must_use]
pub fn response(id: &Id, result: Result<Value, RpcError>) -> Vec<u8> {
    let mut message = Map::new();
    message.insert("jsonrpc".into(), json!("2.0"));
    message.insert("id".into(), id.clone());
    match result {
        Ok(value) => message.insert("result".into(), value),
        Err(error) => message.insert(
            "error".into(),
            json!({"code": error.code, "message": error.message}),
        ),
    };
    line(Value::Object(message))
}

fn line(value: Value) -> Vec<u8> {
    // serde_json escapes newlines inside strings, so one message is one line.
    let mut bytes = serde_json::to_vec(&value).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}
