//! What the tests of a tool crate check of its `[tools.<name>]` table:
//! that its JSON Schema has the keys serde reads and refuses others, that
//! a key's description says what the file's reader needs, and that serde
//! refuses a misspelled key by name. With the `testing` feature only;
//! each function panics, as an assertion does, when its check fails.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

/// The JSON Schema of the table `T`, checked to refuse unknown keys and
/// to have exactly `keys`, in this order.
///
/// # Panics
///
/// When the schema has other keys, or admits unknown ones.
pub fn table_schema<T: JsonSchema>(keys: &[&str]) -> serde_json::Value {
    let schema = schemars::schema_for!(T).as_value().clone();
    assert_eq!(schema["additionalProperties"], false, "{schema:#}");
    let names: Vec<&str> = schema["properties"]
        .as_object()
        .map(|properties| properties.keys().map(String::as_str).collect())
        .unwrap_or_default();
    assert_eq!(names, keys, "{schema:#}");
    schema
}

/// Checks that the description of `key` in `schema` (a table's, as
/// [`table_schema`] returns it) contains `words`.
///
/// # Panics
///
/// When it does not, or `key` has no description.
pub fn assert_described(schema: &serde_json::Value, key: &str, words: &str) {
    assert!(
        schema["properties"][key]["description"]
            .as_str()
            .is_some_and(|text| text.contains(words)),
        "the description of `{key}` does not say {words:?}: {schema:#}"
    );
}

/// Checks that `text` (TOML) is refused as a table `T`, with `message` in
/// serde's error (``unknown field `roots` ``).
///
/// # Panics
///
/// When `text` deserializes, or the error says something else.
pub fn assert_refused<T: DeserializeOwned>(text: &str, message: &str) {
    match toml::from_str::<T>(text) {
        Ok(_) => panic!("{text:?} deserialized; expected {message:?}"),
        Err(error) => assert!(error.message().contains(message), "{error}"),
    }
}
