//! An MCP server's questions in `dsh run`, asked on the terminal like a
//! tool's approval ([`AskOnTheTerminal`]):
//!
//! - **Sampling**: the server's name and request (system prompt,
//!   messages, max tokens; escaped, cut) and `[y]es, [n]o`; a yes has the
//!   session's model (`--model`, `/model`) answer it. Refused where no one
//!   can answer (input that is not a terminal); a mode that never asks
//!   (`full-access`) answers unasked.
//! - **Elicitation**: the server's message, then a form's fields one line
//!   each, in the order of their names (a wrong value is said and asked
//!   again, at most [`MAX_TRIES`] times), or a URL to visit and `[a]ccept,
//!   [d]ecline`. Declined where no one can answer.
//!
//! One question at a time: each holds [`AskOnTheTerminal::question`]
//! while it is asked (a form, all its fields).

use dsh_agent_loop::async_trait;
use dsh_deployment::policy::sampling::{
    cannot_ask, declined, describe_elicitation, describe_sampling, sampling_asks, sampling_title,
};
use dsh_tool_mcp::{
    AskError, Asker, ElicitAnswer, ElicitKind, Elicitation, Elicits, Sampled, SamplingRequest,
    shown,
};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::approval::{Answer, AskOnTheTerminal};

/// How many times a form's field is asked before the form is cancelled.
const MAX_TRIES: usize = 3;

#[async_trait]
impl Asker for AskOnTheTerminal {
    /// At a terminal, with a model to answer.
    fn samples(&self) -> bool {
        self.terminal && self.sampler.is_some()
    }

    /// Forms and URLs, at a terminal.
    fn elicits(&self) -> Elicits {
        Elicits {
            form: self.terminal,
            url: self.terminal,
        }
    }

    async fn sample(&self, request: SamplingRequest) -> Result<Sampled, AskError> {
        let server = request.origin.server.clone();
        let Some(sampler) = &self.sampler else {
            return Err(cannot_ask(&server, "`dsh run` has no model for it"));
        };
        let cancel = CancellationToken::new();
        if sampling_asks(*self.asking.lock()) {
            if !self.terminal {
                return Err(cannot_ask(&server, "`dsh run`'s input is not a terminal"));
            }
            let question = format!(
                "{}:\n{}\nAllow? [y]es, [n]o: ",
                sampling_title(&request),
                indented(&describe_sampling(&request))
            );
            let asked = self.question().await;
            let answer = self.read_answer(&question, &cancel).await;
            drop(asked);
            if !matches!(answer.as_deref().map(Answer::of), Some(Answer::Yes)) {
                return Err(declined(&server));
            }
        }
        let model = self.model.lock().clone();
        sampler.sample(&request, model.as_deref(), &cancel).await
    }

    async fn elicit(&self, request: Elicitation) -> ElicitAnswer {
        if !self.terminal {
            return ElicitAnswer::Decline;
        }
        let cancel = CancellationToken::new();
        let _question = self.question().await;
        self.say(&format!("{}\n", describe_elicitation(&request)));
        match &request.kind {
            ElicitKind::Url { .. } => {
                let question = "Open the URL, then [a]ccept or [d]ecline: ";
                match self.read_answer(question, &cancel).await {
                    None => ElicitAnswer::Cancel,
                    Some(line) if matches!(line.trim(), "a" | "accept" | "y" | "yes") => {
                        ElicitAnswer::Accept(None)
                    }
                    Some(_) => ElicitAnswer::Decline,
                }
            }
            ElicitKind::Form { schema } => self.fill_in(schema, &cancel).await,
        }
    }
}

impl AskOnTheTerminal {
    /// Asks each field of the form `schema`, one line each: accepted with
    /// the values given; cancelled when the terminal cannot be read or a
    /// field is answered wrong [`MAX_TRIES`] times; declined when the
    /// schema is no form dsh can ask.
    async fn fill_in(&self, schema: &Value, cancel: &CancellationToken) -> ElicitAnswer {
        let fields = match fields(schema) {
            Ok(fields) => fields,
            Err(error) => {
                self.say(&format!(
                    "declined: {}\n",
                    shown(&error.to_string(), SHOWN_CHARS)
                ));
                return ElicitAnswer::Decline;
            }
        };
        let mut content = Map::new();
        for field in &fields {
            let mut tries = 0;
            let value = loop {
                let Some(line) = self.read_answer(&field.question(), cancel).await else {
                    return ElicitAnswer::Cancel;
                };
                match field.value(&line) {
                    Ok(value) => break value,
                    Err(error) if tries + 1 < MAX_TRIES => {
                        tries += 1;
                        self.say(&format!("{}\n", shown(&error.to_string(), SHOWN_CHARS)));
                    }
                    Err(_) => return ElicitAnswer::Cancel,
                }
            };
            if let Some(value) = value {
                content.insert(field.name.clone(), value);
            }
        }
        ElicitAnswer::Accept(Some(content))
    }
}

/// The most characters of a field's question, or of an error about the
/// form, shown: the server's text in it (names, values, its description)
/// escaped as [`shown`] escapes a server's text.
const SHOWN_CHARS: usize = 400;

/// Every line of `text`, indented two spaces.
fn indented(text: &str) -> String {
    let lines: Vec<String> = text.lines().map(|line| format!("  {line}")).collect();
    lines.join("\n")
}

/// One field of a form.
#[derive(Debug, Clone, PartialEq)]
struct Field {
    name: String,
    kind: FieldKind,
    required: bool,
    /// Its title or description, shown with the question.
    about: Option<String>,
}

/// What a field takes.
#[derive(Debug, Clone, PartialEq)]
enum FieldKind {
    Text,
    Integer,
    Number,
    Boolean,
    /// One of these values.
    OneOf(Vec<String>),
}

/// Why a form or a field's answer cannot be taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum FormError {
    #[error("the form is not a JSON object schema with `properties`")]
    NotAForm,
    #[error("field `{0}` is of a type a terminal form does not ask (`{1}`)")]
    UnknownType(String, String),
    #[error("`{field}` is required")]
    Missing { field: String },
    #[error("`{field}` takes {expected}, not `{given}`")]
    Invalid {
        field: String,
        expected: String,
        given: String,
    },
}

/// The fields of `schema`, a flat object schema, in the order it lists
/// them: from a server, the order of their names (rmcp keeps a form's
/// properties sorted).
fn fields(schema: &Value) -> Result<Vec<Field>, FormError> {
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .ok_or(FormError::NotAForm)?;
    let required: Vec<&str> = (schema.get("required").and_then(Value::as_array))
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    properties
        .iter()
        .map(|(name, property)| {
            let about = ["title", "description"]
                .iter()
                .find_map(|key| property.get(*key).and_then(Value::as_str))
                .map(str::to_owned);
            Ok(Field {
                name: name.clone(),
                kind: field_kind(name, property)?,
                required: required.contains(&name.as_str()),
                about,
            })
        })
        .collect()
}

fn field_kind(name: &str, property: &Value) -> Result<FieldKind, FormError> {
    let listed = |key: &str| -> Option<Vec<String>> {
        let values = property.get(key)?.as_array()?;
        Some(
            values
                .iter()
                .filter_map(|value| match value {
                    Value::String(text) => Some(text.clone()),
                    other => other.get("const")?.as_str().map(str::to_owned),
                })
                .collect(),
        )
    };
    if let Some(values) = listed("enum").or_else(|| listed("oneOf")) {
        return Ok(FieldKind::OneOf(values));
    }
    match property.get("type").and_then(Value::as_str).unwrap_or("") {
        "string" => Ok(FieldKind::Text),
        "integer" => Ok(FieldKind::Integer),
        "number" => Ok(FieldKind::Number),
        "boolean" => Ok(FieldKind::Boolean),
        other => Err(FormError::UnknownType(name.to_owned(), other.to_owned())),
    }
}

impl Field {
    /// The line that asks for it.
    fn question(&self) -> String {
        let kind = match &self.kind {
            FieldKind::Text => "text".to_owned(),
            FieldKind::Integer => "a whole number".to_owned(),
            FieldKind::Number => "a number".to_owned(),
            FieldKind::Boolean => "y or n".to_owned(),
            FieldKind::OneOf(values) => format!("one of {}", values.join(", ")),
        };
        let required = if self.required { ", required" } else { "" };
        let about = (self.about.as_deref())
            .map(|about| format!(" — {about}"))
            .unwrap_or_default();
        // The name, the values and the description are the server's.
        let question = format!("{} ({kind}{required}){about}", self.name);
        format!("  {}: ", shown(&question, SHOWN_CHARS))
    }

    /// The value `line` gives the field: `None` for an empty answer to a
    /// field that is not required.
    fn value(&self, line: &str) -> Result<Option<Value>, FormError> {
        let given = line.trim();
        if given.is_empty() {
            return match self.required {
                true => Err(FormError::Missing {
                    field: self.name.clone(),
                }),
                false => Ok(None),
            };
        }
        let invalid = |expected: &str| FormError::Invalid {
            field: self.name.clone(),
            expected: expected.to_owned(),
            given: given.to_owned(),
        };
        let value = match &self.kind {
            FieldKind::Text => Value::String(given.to_owned()),
            FieldKind::Integer => given
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| invalid("a whole number"))?,
            FieldKind::Number => (given.parse::<f64>().ok())
                .and_then(|number| serde_json::Number::from_f64(number).map(Value::Number))
                .ok_or_else(|| invalid("a number"))?,
            FieldKind::Boolean => match given.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" => Value::Bool(true),
                "n" | "no" | "false" => Value::Bool(false),
                _ => return Err(invalid("y or n")),
            },
            FieldKind::OneOf(values) => match values.iter().find(|value| *value == given) {
                Some(value) => Value::String(value.clone()),
                None => return Err(invalid(&format!("one of {}", values.join(", ")))),
            },
        };
        Ok(Some(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_agent_loop::{ModelResponse, ScriptedAdapter};
    use dsh_deployment::measure::trace::{Counting, Trace};
    use dsh_deployment::policy::approval::ApprovalPolicy;
    use dsh_deployment::policy::modes::Asking;
    use dsh_deployment::policy::sampling::Sampler;
    use serde_json::json;
    use std::sync::Arc;

    #[tokio::test]
    async fn sampling_is_answered_by_the_sessions_model_not_the_hosts() {
        let model = Arc::new(ScriptedAdapter::new([ModelResponse::text("Blue")]));
        let trace = Arc::new(Trace::summary_only(Counting::Bytes));
        let sampler = Sampler::new(model.clone(), "host-model".into(), trace);
        let policy = ApprovalPolicy::new(
            Vec::new(),
            dsh_tool_mcp::McpServers::default(),
            dsh_tools::ToolRegistry::default(),
        );
        let console = Arc::new(super::super::console::Console::new());
        let asker = AskOnTheTerminal::new(policy, console).answering(sampler);
        // A mode that never asks, as `/model` and `/mode` leave it.
        asker.steer(Asking::Never, "session-model");
        let request = SamplingRequest {
            origin: dsh_tool_mcp::Origin {
                server: "docs".into(),
                session: None,
            },
            system_prompt: None,
            messages: Vec::new(),
            max_tokens: 16,
        };
        let sampled = asker.sample(request).await.expect("answered");
        assert_eq!(sampled.model, "session-model");
        assert_eq!(model.requests()[0].model, "session-model");
    }

    fn form() -> Vec<Field> {
        fields(&json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "Your name"},
                "age": {"type": "integer"},
                "ratio": {"type": "number"},
                "subscribe": {"type": "boolean"},
                "size": {"type": "string", "enum": ["s", "m", "l"]}
            },
            "required": ["name"]
        }))
        .expect("a form")
    }

    #[test]
    fn a_forms_fields_are_read_in_order_with_their_kinds() {
        let form = form();
        let names: Vec<&str> = form.iter().map(|field| field.name.as_str()).collect();
        assert_eq!(names, ["name", "age", "ratio", "subscribe", "size"]);
        assert!(form[0].required && !form[1].required);
        assert_eq!(
            form[4].kind,
            FieldKind::OneOf(vec!["s".into(), "m".into(), "l".into()])
        );
        assert_eq!(form[0].question(), "  name (text, required) — Your name: ");
    }

    #[test]
    fn answers_are_typed_and_a_wrong_one_says_why() {
        let form = form();
        assert_eq!(form[0].value(" Ada \n"), Ok(Some(json!("Ada"))));
        assert_eq!(
            form[0].value("\n"),
            Err(FormError::Missing {
                field: "name".into()
            })
        );
        assert_eq!(form[1].value(""), Ok(None));
        assert_eq!(form[1].value("36"), Ok(Some(json!(36))));
        assert_eq!(
            form[1].value("3.5").map_err(|error| error.to_string()),
            Err("`age` takes a whole number, not `3.5`".to_owned())
        );
        assert_eq!(form[2].value("0.5"), Ok(Some(json!(0.5))));
        assert_eq!(form[3].value("Yes"), Ok(Some(json!(true))));
        assert_eq!(form[3].value("n"), Ok(Some(json!(false))));
        assert!(form[3].value("maybe").is_err());
        assert_eq!(form[4].value("m"), Ok(Some(json!("m"))));
        assert!(form[4].value("xl").is_err());
    }

    #[test]
    fn a_servers_names_and_values_are_escaped_in_a_question() {
        let form = fields(&json!({
            "properties": {
                "n\u{1b}[2J": {"enum": ["a\u{1b}]52;c;aGk=\u{7}"], "title": "t\u{1b}[31m"}
            }
        }))
        .expect("a form");
        assert_eq!(
            form[0].question(),
            "  n\\u{1b}[2J (one of a\\u{1b}]52;c;aGk=\\u{7}) — t\\u{1b}[31m: "
        );
        assert!(!form[0].question().contains('\u{1b}'));
    }

    #[test]
    fn a_schema_that_is_no_flat_form_is_refused() {
        assert_eq!(fields(&json!({"type": "object"})), Err(FormError::NotAForm));
        assert_eq!(
            fields(&json!({"properties": {"tags": {"type": "array"}}})),
            Err(FormError::UnknownType("tags".into(), "array".into()))
        );
    }
}
