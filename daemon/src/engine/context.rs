//! The run context: a JSON map shared by the stages of a run
//! (execution/context.mdx). Keys are flat strings; dotted names such as
//! `human.gate.label` are single keys.

use serde_json::{Map, Value};

/// Serialised size above which a context value moves to the blob store.
pub(crate) const OFFLOAD_BYTES: usize = 100 * 1024;

/// The run context.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Context {
    values: Map<String, Value>,
}

impl Context {
    #[must_use]
    pub fn new() -> Context {
        Context::default()
    }

    /// A context holding `values` (from a checkpoint).
    #[must_use]
    pub(crate) fn from_map(values: Map<String, Value>) -> Context {
        Context { values }
    }

    #[must_use]
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.values.get(key)
    }

    /// The value as text: strings as they are, other JSON printed, missing as "".
    #[must_use]
    pub fn text(&self, key: &str) -> String {
        match self.values.get(key) {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
        }
    }

    pub fn set(&mut self, key: impl Into<String>, value: impl Into<Value>) {
        self.values.insert(key.into(), value.into());
    }

    pub fn remove(&mut self, key: &str) {
        self.values.remove(key);
    }

    /// Merges a stage's updates; later keys win.
    pub fn merge(&mut self, updates: &Map<String, Value>) {
        for (k, v) in updates {
            self.values.insert(k.clone(), v.clone());
        }
    }

    #[must_use]
    pub fn values(&self) -> &Map<String, Value> {
        &self.values
    }

    #[must_use]
    pub fn into_values(self) -> Map<String, Value> {
        self.values
    }
}
