//! `ScriptedAdapter`: canned answers, for tests and offline demos.

use std::collections::VecDeque;
use std::path::Path;

use async_trait::async_trait;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::{
    FinishReason, ModelAdapter, ModelError, ModelRequest, ModelResponse, TextSink, Thought,
    ToolCall, Usage,
};

/// A model that answers from a queue of canned answers, in order, and
/// records every request it gets. Deterministic and offline.
///
/// ```
/// use dsh_agent_loop::{ModelResponse, ScriptedAdapter, ToolCall};
///
/// let adapter = ScriptedAdapter::new([
///     ModelResponse::text("Let me look.").with_tool_call(ToolCall::new("call_1", "read", r#"{"file_path":"README.md"}"#)),
///     ModelResponse::text("It is a README."),
/// ]);
/// assert_eq!(adapter.remaining(), 2);
/// assert!(adapter.requests().is_empty());
/// ```
#[derive(Debug, Default)]
pub struct ScriptedAdapter {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    answers: VecDeque<ModelResponse>,
    given: usize,
    requests: Vec<ModelRequest>,
}

impl ScriptedAdapter {
    /// An adapter that gives `answers`, one per request.
    pub fn new(answers: impl IntoIterator<Item = ModelResponse>) -> Self {
        Self {
            state: Mutex::new(State {
                answers: answers.into_iter().collect(),
                ..State::default()
            }),
        }
    }

    /// An adapter that gives the answers of `script`.
    pub fn from_script(script: Script) -> Self {
        Self::new(script.into_responses())
    }

    /// An adapter that gives the answers of a script file: JSON for a
    /// `.json` file, TOML otherwise. See [`Script`] for the format.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, ModelError> {
        Script::load(path).map(Self::from_script)
    }

    /// Queues one more answer.
    pub fn push(&self, answer: ModelResponse) {
        self.state.lock().answers.push_back(answer);
    }

    /// How many answers are left.
    pub fn remaining(&self) -> usize {
        self.state.lock().answers.len()
    }

    /// Every request so far, oldest first.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.state.lock().requests.clone()
    }
}

#[async_trait]
impl ModelAdapter for ScriptedAdapter {
    /// Passes the answer's whole text (and each thought's) to `on_text`
    /// at once: a script has no pieces.
    async fn complete(
        &self,
        request: &ModelRequest,
        on_text: TextSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        if cancel.is_cancelled() {
            return Err(ModelError::Cancelled);
        }
        let answer = {
            let mut state = self.state.lock();
            state.requests.push(request.clone());
            match state.answers.pop_front() {
                Some(answer) => {
                    state.given += 1;
                    answer
                }
                None => {
                    return Err(ModelError::ScriptExhausted {
                        request: state.requests.len(),
                        answers: state.given,
                    });
                }
            }
        };
        answer.show_whole(on_text);
        Ok(answer)
    }
}

/// A script of canned answers, as a file holds it.
///
/// In TOML:
///
/// ```toml
/// [[answers]]
/// text = "Let me look at the file."
///
/// [[answers.tool_calls]]
/// name = "read"
/// arguments = { file_path = "README.md" }
///
/// [[answers]]
/// text = "It is a README."
/// ```
///
/// or the same in JSON: `{"answers": [{"text": "…", "tool_calls": [{"name":
/// "read", "arguments": {"file_path": "README.md"}}]}, {"text": "…"}]}`.
///
/// A tool call's `arguments` is a table (sent as its JSON text) or a string
/// (sent exactly as written, so a script can send malformed arguments); its
/// `id` defaults to `call_<answer>_<call>`.
///
/// ```
/// use dsh_agent_loop::Script;
///
/// let script: Script = toml::from_str(r#"
///     [[answers]]
///     [[answers.tool_calls]]
///     name = "bash"
///     arguments = { command = "ls" }
/// "#)?;
/// let answers = script.into_responses();
/// assert_eq!(answers[0].tool_calls[0].id, "call_1_1");
/// assert_eq!(answers[0].tool_calls[0].arguments, r#"{"command":"ls"}"#);
/// # Ok::<(), toml::de::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// The answers, one per request.
    pub answers: Vec<ScriptedAnswer>,
}

/// One canned answer of a [`Script`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedAnswer {
    /// The answer's text.
    #[serde(default)]
    pub text: String,
    /// The tools the answer calls.
    #[serde(default)]
    pub tool_calls: Vec<ScriptedToolCall>,
    /// Why the model stopped (`max_tokens`, `refusal`); `stop` when
    /// absent.
    #[serde(default)]
    pub finish: FinishReason,
    /// The usage the API would have reported (`usage = { prompt_tokens =
    /// 1200, completion_tokens = 40 }`); none when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// What the model thought before it answered (`thoughts = ["Let me
    /// look."]`), each shown and recorded as a thought without a
    /// signature; none when absent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thoughts: Vec<String>,
}

/// One tool call of a [`ScriptedAnswer`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedToolCall {
    /// The call's id; `call_<answer>_<call>` when absent.
    #[serde(default)]
    pub id: Option<String>,
    /// The tool's name.
    pub name: String,
    /// The arguments: a table, or a string sent as written.
    #[serde(default = "empty_arguments")]
    pub arguments: serde_json::Value,
}

fn empty_arguments() -> serde_json::Value {
    serde_json::Value::Object(serde_json::Map::new())
}

impl Script {
    /// Reads a script file: JSON for a `.json` file, TOML otherwise.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, ModelError> {
        let path = path.as_ref();
        let failed = |message: String| ModelError::Script {
            path: path.to_path_buf(),
            message,
        };
        // A FIFO or a device would hang or fill memory: refused.
        let text = dsh_tools::read_input_file(path, dsh_tools::MAX_INPUT_FILE_BYTES)
            .map_err(|error| failed(error.to_string()))?;
        if path
            .extension()
            .is_some_and(|extension| extension == "json")
        {
            let deserializer = &mut serde_json::Deserializer::from_str(&text);
            serde_path_to_error::deserialize(deserializer)
                .map_err(|error| failed(format!("at `{}`: {}", error.path(), error.inner())))
        } else {
            toml::from_str(&text).map_err(|error| failed(error.to_string()))
        }
    }

    /// The answers as an adapter gives them.
    pub fn into_responses(self) -> Vec<ModelResponse> {
        self.answers
            .into_iter()
            .enumerate()
            .map(|(answer, scripted)| ModelResponse {
                text: scripted.text,
                tool_calls: scripted
                    .tool_calls
                    .into_iter()
                    .enumerate()
                    .map(|(call, scripted)| ToolCall {
                        id: scripted
                            .id
                            .unwrap_or_else(|| format!("call_{}_{}", answer + 1, call + 1)),
                        name: scripted.name,
                        arguments: match scripted.arguments {
                            serde_json::Value::String(raw) => raw,
                            arguments => arguments.to_string(),
                        },
                    })
                    .collect(),
                usage: scripted.usage,
                finish: scripted.finish,
                thoughts: (scripted.thoughts.into_iter())
                    .map(|text| Thought::Text {
                        text,
                        signature: None,
                    })
                    .collect(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> ModelRequest {
        ModelRequest {
            model: "m".into(),
            system: None,
            tools: Vec::new(),
            messages: Vec::new(),
            session: None,
            effort: None,
            max_tokens: None,
        }
    }

    #[tokio::test]
    async fn answers_in_order_then_says_the_script_is_exhausted() {
        let adapter = ScriptedAdapter::new([ModelResponse::text("one")]);
        let cancel = CancellationToken::new();
        let first = adapter
            .complete(&request(), &|_: crate::Piece<'_>| {}, &cancel)
            .await;
        assert_eq!(first.ok(), Some(ModelResponse::text("one")));
        let second = adapter
            .complete(&request(), &|_: crate::Piece<'_>| {}, &cancel)
            .await;
        let Err(error) = second else {
            panic!("expected the script to be exhausted");
        };
        assert!(matches!(
            error,
            ModelError::ScriptExhausted {
                request: 2,
                answers: 1
            }
        ));
        assert_eq!(adapter.requests().len(), 2);
    }

    #[test]
    fn json_and_toml_scripts_load_alike() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let json = dir.path().join("script.json");
        std::fs::write(
            &json,
            r#"{"answers": [{"text": "a", "tool_calls": [{"id": "x", "name": "bash", "arguments": "{bad"}]}]}"#,
        )?;
        let toml = dir.path().join("script.toml");
        std::fs::write(
            &toml,
            "[[answers]]\ntext = \"a\"\n[[answers.tool_calls]]\nid = \"x\"\nname = \"bash\"\narguments = \"{bad\"\n",
        )?;
        let from_json = Script::load(&json)?.into_responses();
        assert_eq!(from_json, Script::load(&toml)?.into_responses());
        assert_eq!(from_json[0].tool_calls[0].arguments, "{bad");
        Ok(())
    }

    #[test]
    fn a_bad_script_names_the_file_and_the_field() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let json = dir.path().join("script.json");
        std::fs::write(&json, r#"{"answers": [{"txt": "a"}]}"#)?;
        let error = Script::load(&json).err().ok_or("expected an error")?;
        let message = error.to_string();
        assert!(message.contains("script.json"), "{message}");
        assert!(message.contains("answers[0]"), "{message}");
        assert!(message.contains("txt"), "{message}");
        Ok(())
    }
}
