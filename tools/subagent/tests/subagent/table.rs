//! A subagent instance's `[tools.<name>]` table, as a deployment file
//! writes it.

use dsh_tools::table_testing::{assert_described, assert_refused, table_schema};

use dsh_tool_subagent::*;
use dsh_tools::TableProblem;

type Spanned = toml::Spanned<String>;

fn table(text: &str) -> SubagentTable {
    toml::from_str(text).expect("deserializes")
}

fn errors(text: &str) -> Vec<String> {
    table(text)
        .check("task")
        .expect_err("a problem")
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn a_spawn_table_with_a_child_makes_its_own_provider() {
    let table = table(
        "kind = \"subagent\"\nprovider = \"spawn\"\npermission = \"ask\"\n\
         [child]\nmodel = \"small\"\ntools = [\"read\"]",
    );
    assert_eq!(table.check("review"), Ok(()));
    assert!(table.permission.asks());
    let provider = table
        .own_provider("review", &[])
        .expect("built")
        .expect("its own");
    assert_eq!(provider.name(), "review");
    assert!(!provider.inherits_parent_context());
    assert_eq!(
        table.tool_config("review"),
        SubagentToolConfig::new("review").named("review")
    );
}

#[test]
fn an_instance_without_keys_of_its_own_binds_to_its_provider() {
    let table = table("kind = \"subagent\"\nprovider = \"fork\"");
    assert_eq!(table.check("fork"), Ok(()));
    assert!(
        table
            .own_provider("fork", &[])
            .expect("nothing to build")
            .is_none()
    );
    assert_eq!(
        table.tool_config("branch"),
        SubagentToolConfig::new("fork").named("branch")
    );
}

#[test]
fn an_acp_table_runs_its_command_within_its_timeout() {
    let table = table(
        "kind = \"subagent\"\nprovider = \"acp\"\ncommand = [\"dsh\", \"acp\"]\n\
         timeout_secs = 5",
    );
    assert_eq!(table.check("helper"), Ok(()));
    let provider = table
        .own_provider("helper", &[])
        .expect("built")
        .expect("its own");
    assert_eq!(provider.name(), "helper");
    assert_eq!(table.tool_config("helper").name, "helper");
}

#[test]
fn each_key_must_go_with_its_provider() {
    assert_eq!(
        errors("kind = \"subagent\""),
        ["subagent instance `task` has no `provider`"]
    );
    assert_eq!(
        errors(
            "kind = \"subagent\"\nprovider = \"fork\"\ncommand = [\"x\"]\ntimeout_secs = 3\n\
             [child]\nmodel = \"m\""
        ),
        [
            "`timeout_secs` of `[tools.task]` must be a positive number of seconds, for an \
             `acp` instance",
            "tool instance `task` has a `child` table, but its provider is `fork`",
            "tool instance `task` has a `command`, but its provider is `fork`",
        ]
    );
    assert_eq!(
        errors("kind = \"subagent\"\nprovider = \"acp\"\ntimeout_secs = 0"),
        [
            "`timeout_secs` of `[tools.task]` must be a positive number of seconds, for an \
             `acp` instance",
            "subagent instance `task` has provider `acp` but no `command`",
        ]
    );
    assert_eq!(
        errors("kind = \"subagent\"\nprovider = \"acp\"\ncommand = [\" \"]"),
        ["subagent instance `task` has an empty `command`"]
    );
}

#[test]
fn a_problem_points_at_the_provider_as_written() {
    let text = "kind = \"subagent\"\nprovider = \"spawn\"\ncommand = [\"x\"]";
    let table: SubagentTable<Spanned> = toml::from_str(text).expect("valid");
    let errors = table.check("task").expect_err("a command for spawn");
    let places = errors[0].places();
    assert_eq!(places[0].key, Some("command"));
    let span = places[1].value.expect("the provider").span();
    assert_eq!(&text[span], "\"spawn\"");
    assert!(errors[0].help().is_some_and(|help| help.contains("`acp`")));
}

#[test]
fn a_misspelled_key_or_kind_is_refused_by_name() {
    assert_refused::<SubagentTable>(
        "kind = \"subagent\"\nprovider = \"spawn\"\ntimeout = 3",
        "unknown field `timeout`",
    );
    assert_refused::<SubagentTable>(
        "kind = \"subagnet\"\nprovider = \"spawn\"",
        "unknown variant `subagnet`",
    );
    // Not a key of the child's table.
    assert_refused::<SubagentTable>(
        "kind = \"subagent\"\nprovider = \"spawn\"\n[child]\ntemperature = 1",
        "unknown field `temperature`",
    );
}

#[test]
fn the_schema_has_the_keys_and_refuses_others() {
    let schema = table_schema::<SubagentTable>(&[
        "kind",
        "provider",
        "permission",
        "command",
        "timeout_secs",
        "child",
        "env_keep",
    ]);
    assert_eq!(
        schema["required"],
        serde_json::json!(["kind", "provider"]),
        "{schema:#}"
    );
    assert_eq!(schema["properties"]["provider"]["type"], "string");
    let child = &schema["$defs"]["ChildAgentConfig"];
    assert_eq!(child["additionalProperties"], false, "{child:#}");
    assert_described(child, "model", "Default: the calling agent's model");
}
