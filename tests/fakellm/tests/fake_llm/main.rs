//! The fake LLM server over real TCP, driven by a raw HTTP client.

mod anthropic;
mod binary;
mod failures;
mod gemini;
mod openai_chat;
mod openai_responses;
mod scripting;
mod support;
