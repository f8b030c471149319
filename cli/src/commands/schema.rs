//! `dsh schema`: the JSON Schema of `dsh.toml`, which the library makes
//! from the types its loader reads (`dsh_deployment::file::schema`).

use dsh_deployment::Problem;

use super::{Outcome, print};

/// Prints the schema, pretty, with a final newline.
pub(crate) fn run() -> Outcome {
    let schema = dsh_deployment::file::schema();
    let text = serde_json::to_string_pretty(&schema).map_err(|error| {
        vec![Problem::new(format!(
            "the schema cannot be written as JSON: {error}"
        ))]
    })?;
    print(&format!("{text}\n"))
}
