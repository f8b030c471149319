//! Argument schemas and argument parsing: one argument struct is both the
//! schema the model sees and the type the tool receives.

use jsonschema::error::ValidationErrorKind;
use jsonschema::paths::{Location, LocationSegment};
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{ArgumentViolation, ToolError};

/// The JSON-schema object of argument struct `T`, as a tool's
/// [`parameters`](crate::Tool::parameters).
///
/// Doc comments on the fields become the argument descriptions the model
/// reads, their lines joined into paragraphs (source wrapping is not
/// meant for the model). Subschemas are inlined (no `$defs`/`$ref`, which
/// some model APIs handle poorly). The root's `$schema`, `title` and
/// `description` are left out: the struct's doc comment is for Rust
/// readers, and the model reads the tool's own description.
///
/// ```
/// use schemars::JsonSchema;
///
/// #[derive(serde::Deserialize, JsonSchema)]
/// #[serde(deny_unknown_fields)]
/// struct GrepArgs {
///     /// The regular expression to search for,
///     /// in Rust's `regex` syntax.
///     pattern: String,
/// }
///
/// let schema = dsh_tools::parameters_for::<GrepArgs>();
/// assert_eq!(schema["type"], "object");
/// assert_eq!(schema["required"][0], "pattern");
/// assert_eq!(
///     schema["properties"]["pattern"]["description"],
///     "The regular expression to search for, in Rust's `regex` syntax."
/// );
/// assert!(schema.get("title").is_none() && schema.get("description").is_none());
/// ```
pub fn parameters_for<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|settings| {
            settings.inline_subschemas = true;
            settings.meta_schema = None;
        })
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Some(object) = schema.as_object_mut() {
        object.remove("title");
        object.remove("description");
    }
    reflow_descriptions(&mut schema);
    schema
}

/// Joins the lines of every `description` into paragraphs: a line break
/// stays only before a blank line or a list item.
fn reflow_descriptions(schema: &mut Value) {
    match schema {
        Value::Object(object) => {
            for (key, value) in object.iter_mut() {
                match value {
                    Value::String(text) if key == "description" => *text = reflow(text),
                    _ => reflow_descriptions(value),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(reflow_descriptions),
        _ => {}
    }
}

fn reflow(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut previous_blank = true;
    for line in text.lines() {
        let line = line.trim();
        let keeps_break = line.is_empty() || line.starts_with("- ") || line.starts_with("* ");
        if !out.is_empty() {
            out.push(if keeps_break || previous_blank {
                '\n'
            } else {
                ' '
            });
        }
        out.push_str(line);
        previous_blank = line.is_empty();
    }
    out
}

/// Turns validated arguments into the tool's argument struct.
///
/// The registry has already checked the arguments against the schema, so
/// this rarely fails; when it does (a schema looser than the struct), the
/// error names the field.
///
/// ```
/// #[derive(serde::Deserialize)]
/// struct Args {
///     count: u32,
/// }
///
/// let error = dsh_tools::parse_arguments::<Args>("demo", serde_json::json!({"count": "3"})).err();
/// assert_eq!(
///     error.map(|e| e.to_string()).as_deref(),
///     Some("invalid arguments for tool `demo`: `count`: invalid type: string \"3\", expected u32")
/// );
/// ```
pub fn parse_arguments<T: DeserializeOwned>(tool: &str, arguments: Value) -> Result<T, ToolError> {
    serde_path_to_error::deserialize(arguments).map_err(|error| {
        let field = error.path().to_string();
        ToolError::invalid_arguments(tool, field, error.into_inner().to_string())
    })
}

/// Every way `arguments` breaks `validator`'s schema, each naming its field.
pub(crate) fn violations(
    validator: &jsonschema::Validator,
    arguments: &Value,
) -> Vec<ArgumentViolation> {
    validator
        .iter_errors(arguments)
        .map(|error| {
            let parent = field_path(error.instance_path());
            match error.kind() {
                // A missing or unexpected property is reported at its parent
                // object; name the property itself, so the model sees which.
                ValidationErrorKind::Required { property } => ArgumentViolation {
                    field: join_property(&parent, property.as_str().unwrap_or_default()),
                    message: "required argument is missing".to_owned(),
                },
                ValidationErrorKind::AdditionalProperties { unexpected }
                    if unexpected.len() == 1 =>
                {
                    ArgumentViolation {
                        field: join_property(&parent, &unexpected[0]),
                        message: "unknown argument; the schema allows no other properties"
                            .to_owned(),
                    }
                }
                _ => ArgumentViolation {
                    field: parent,
                    message: error.to_string(),
                },
            }
        })
        .collect()
}

/// `/todos/1/status` as `todos[1].status`.
fn field_path(location: &Location) -> String {
    let mut path = String::new();
    for segment in location {
        match segment {
            LocationSegment::Property(property) => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(&property);
            }
            LocationSegment::Index(index) => {
                path.push('[');
                path.push_str(&index.to_string());
                path.push(']');
            }
        }
    }
    path
}

fn join_property(parent: &str, property: &str) -> String {
    if parent.is_empty() {
        property.to_owned()
    } else {
        format!("{parent}.{property}")
    }
}

#[cfg(test)]
mod tests {
    use super::reflow;

    #[test]
    fn reflow_joins_wrapped_lines_and_keeps_paragraphs_and_lists() {
        assert_eq!(
            reflow("One sentence\nwrapped.\n\nA list:\n- first\n  continued\n- second"),
            "One sentence wrapped.\n\nA list:\n- first continued\n- second"
        );
    }
}
