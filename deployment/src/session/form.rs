//! A server's elicitation form, asked field by field — the rules of a
//! form a front end asks one line at a time (a terminal, a script): which
//! fields there are and in what order, what each takes, what a wrong
//! answer says, how often it is asked again. An editor that shows the
//! whole form takes the schema as it is.

use dsh_agent_loop::async_trait;
use dsh_tool_mcp::{ElicitAnswer, shown};
use serde_json::{Map, Value};

/// How many times a form's field is asked before the form is cancelled.
pub const MAX_TRIES: usize = 3;

/// The most characters of a field's question, or of an error about the
/// form, shown: the server's text in it (names, values, its description)
/// escaped as [`shown`] escapes a server's text.
const SHOWN_CHARS: usize = 400;

/// A form whose fields are asked one line each.
#[derive(Debug, Clone, PartialEq)]
pub struct Form {
    fields: Vec<Field>,
}

impl Form {
    /// The form `schema` describes: a flat object schema of strings,
    /// numbers, integers, booleans and enums; `Err` says why it is none.
    pub fn of(schema: &Value) -> Result<Self, FormError> {
        fields(schema).map(|fields| Self { fields })
    }

    /// Asks each field on `lines`, saying what is wrong with an answer:
    /// accepted with the values given; cancelled when a line cannot be
    /// read or a field is answered wrong [`MAX_TRIES`] times.
    pub async fn fill(&self, lines: &mut dyn Lines) -> ElicitAnswer {
        let mut content = Map::new();
        for field in &self.fields {
            let mut tries = 0;
            let value = loop {
                let Some(line) = lines.ask(field.question()).await else {
                    return ElicitAnswer::Cancel;
                };
                match field.value(&line) {
                    Ok(value) => break value,
                    Err(error) if tries + 1 < MAX_TRIES => {
                        tries += 1;
                        lines.say(shown(&error.to_string(), SHOWN_CHARS));
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

/// Where a form is asked a line at a time: a terminal, a script.
#[async_trait]
pub trait Lines: Send {
    /// Asks `question`; the line answered, or `None` when none can be
    /// read.
    async fn ask(&mut self, question: String) -> Option<String>;

    /// Says `text` (what is wrong with an answer).
    fn say(&mut self, text: String);
}

impl FormError {
    /// Why the form is declined, said to the person (escaped, cut).
    pub fn refused(&self) -> String {
        format!("declined: {}", shown(&self.to_string(), SHOWN_CHARS))
    }
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
pub enum FormError {
    /// The schema is no object with properties.
    #[error("the form is not a JSON object schema with `properties`")]
    NotAForm,
    /// A field (its name, and its type) is of a type no line gives.
    #[error("field `{0}` is of a type a terminal form does not ask (`{1}`)")]
    UnknownType(String, String),
    /// A required field was left empty.
    #[error("`{field}` is required")]
    Missing {
        /// The field.
        field: String,
    },
    /// An answer is not what its field takes.
    #[error("`{field}` takes {expected}, not `{given}`")]
    Invalid {
        /// The field.
        field: String,
        /// What it takes.
        expected: String,
        /// What was given.
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
            let about = about(property);
            Ok(Field {
                name: name.clone(),
                kind: field_kind(name, property)?,
                required: required.contains(&name.as_str()),
                about,
            })
        })
        .collect()
}

/// A field's title and its description, as the question shows them
/// (`Title: description`), or whichever it has.
fn about(property: &Value) -> Option<String> {
    let text = |key: &str| {
        (property.get(key).and_then(Value::as_str))
            .map(str::trim)
            .filter(|text| !text.is_empty())
    };
    match (text("title"), text("description")) {
        (Some(title), Some(description)) if title != description => {
            Some(format!("{title}: {description}"))
        }
        (Some(one), _) | (None, Some(one)) => Some(one.to_owned()),
        (None, None) => None,
    }
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
#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form() -> Vec<Field> {
        fields(&json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "Your name"},
                "age": {"type": "integer", "title": "Age", "description": "In years."},
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
        // A title and a description: both, not the title alone.
        assert_eq!(
            form[1].question(),
            "  age (a whole number) — Age: In years.: "
        );
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
