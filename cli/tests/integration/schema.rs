//! `dsh schema`: the JSON Schema of `dsh.toml` on stdout.

use crate::common;

#[test]
fn dsh_schema_prints_a_draft_2020_12_schema_of_the_deployment_file() {
    let output = common::dsh(&["schema"]);
    common::assert_status(&output, 0);
    let schema: serde_json::Value =
        serde_json::from_str(&common::stdout(&output)).expect("JSON on stdout");
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert!(
        schema["properties"]["agents"].is_object(),
        "no `agents`: {schema:#}"
    );
    assert_eq!(schema["additionalProperties"], false);
}
