//! Provider profiles (agents/prompts.mdx, agents/tools.mdx): each provider
//! family gets its own system prompt, tool set and project instruction
//! files. The profile is chosen from the API the session's model resolves
//! to; a failover to another provider mid-session keeps the profile the
//! session began with (its tools are already in the conversation).

use crate::llm::Wire;

use super::config::Permissions;
use super::tools::Tool;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    Anthropic,
    OpenAi,
    Gemini,
    /// Chat Completions servers (Ollama, vLLM, OpenRouter, ...): the
    /// Anthropic tool set, which open models handle best (`edit_file`
    /// rather than a patch format).
    OpenAiCompatible,
}

impl Profile {
    #[must_use]
    pub fn for_wire(wire: Wire) -> Profile {
        match wire {
            Wire::Anthropic => Profile::Anthropic,
            Wire::OpenAi => Profile::OpenAi,
            Wire::Gemini => Profile::Gemini,
            _ => Profile::OpenAiCompatible,
        }
    }

    /// The tools offered to the model, in the order it sees them.
    #[must_use]
    pub fn tools(self, permissions: Permissions, web_search: bool) -> Vec<Tool> {
        let mut tools = vec![Tool::ReadFile];
        if self == Profile::Gemini {
            tools.extend([Tool::ReadManyFiles, Tool::ListDir]);
        }
        tools.extend([Tool::Grep, Tool::Glob]);
        if permissions >= Permissions::ReadWrite {
            tools.push(Tool::WriteFile);
            tools.push(match self {
                Profile::OpenAi => Tool::ApplyPatch,
                _ => Tool::EditFile,
            });
        }
        if permissions >= Permissions::Full {
            tools.push(Tool::Shell);
            tools.push(Tool::WebFetch);
            if web_search {
                tools.push(Tool::WebSearch);
            }
        }
        tools
    }
}
