//! The deployment's layers, registered into the prompt registry's scopes:
//! the deployment-wide `tool_order` into the global layer, each preset's
//! sections and tool order into `preset:<id>`, each agent's into
//! `agent:<id>`. The checks that need the registry happen here: a shadow
//! with nothing to shadow, a tool order naming no tool.

use std::collections::HashMap;

use dsh_system_prompt::inspect::{SectionOrigin, section_origins};
use dsh_system_prompt::suggestion::closest;
use dsh_system_prompt::template::quoted_list;
use dsh_system_prompt::{
    NameKind, Owner, PromptSection, Registration, RegistryError, Scope, ScopeId, SystemPrompt,
};
use dsh_tools::ToolRegistry;

use crate::file::{Deployment, LayerSpec, SectionSpec};
use crate::problem::{Problem, SourceFile};

/// One layer to register: whose it is ("agent `reviewer`"), the scope it
/// goes into (`None`: global), the chain of layers outside it (what its
/// sections may shadow), and what it adds.
struct Layer<'a> {
    whose: String,
    /// Where the layer is in the file, as its sections' owners name it:
    /// `presets.review`, `agents[reviewer]`.
    path: String,
    scope: Option<ScopeId>,
    outer: Scope,
    spec: &'a LayerSpec,
}

/// The layers of `deployment`, outermost first, so that a layer's
/// sections can shadow what the layers outside it registered.
fn layers(deployment: &Deployment) -> Vec<Layer<'_>> {
    let global = Layer {
        whose: "the deployment".to_owned(),
        path: String::new(),
        scope: None,
        outer: Scope::global(),
        spec: &deployment.global_layer,
    };
    let presets = deployment.presets.iter().map(|(id, spec)| Layer {
        whose: format!("preset `{id}`"),
        path: format!("presets.{id}"),
        scope: Some(ScopeId::preset(id)),
        outer: Scope::global(),
        spec,
    });
    let agents = deployment.agents.iter().map(|agent| Layer {
        whose: format!("agent `{}`", agent.id.get_ref()),
        path: format!("agents[{}]", agent.id.get_ref()),
        scope: Some(ScopeId::agent(agent.id.get_ref())),
        outer: Scope::new(
            agent
                .preset
                .as_ref()
                .map(|preset| ScopeId::preset(preset.get_ref())),
        ),
        spec: &agent.layer,
    });
    std::iter::once(global)
        .chain(presets)
        .chain(agents)
        .collect()
}

/// Registers every layer of `deployment`; every problem is reported,
/// and nothing is kept registered when there is one.
pub(super) fn register_layers(
    prompt: &SystemPrompt,
    tools: &ToolRegistry,
    deployment: &Deployment,
) -> Result<Vec<Registration>, Vec<Problem>> {
    let file = &deployment.file;
    let known = tools.names();
    let mut registrations = Vec::new();
    let mut problems = Vec::new();
    for layer in layers(deployment) {
        let handle = match &layer.scope {
            Some(scope) => prompt.in_scope(scope.clone()),
            None => prompt.clone(),
        };
        if let Some(order) = &layer.spec.tool_order {
            // Against every tool, before any agent's restriction: a tool
            // hidden from one agent is still a tool.
            match order.check_known(file, &layer.whose, known.iter().map(String::as_str)) {
                Some(problem) => problems.push(problem),
                None => match handle.tool_order(order.order.clone()) {
                    Ok(registration) => registrations.push(registration),
                    Err(error) => problems.push(
                        file.problem(format!("the `tool_order` of {}: {error}", layer.whose))
                            .label(order.list.span(), "this list"),
                    ),
                },
            }
        }
        let origins = section_origins(prompt, &layer.outer);
        let origins: HashMap<&str, &SectionOrigin> = (origins.iter())
            .map(|origin| (origin.name.as_str(), origin))
            .collect();
        // The layer's sections as one change of the registry: one by one,
        // 10,000 sections were 10,000 copies of a growing state.
        let mut specs = Vec::new();
        let mut parts = Vec::new();
        for section in &layer.spec.sections {
            match section_part(deployment, &layer, &origins, section) {
                Ok(part) => {
                    specs.push(section);
                    parts.push(part);
                }
                Err(problem) => problems.push(problem),
            }
        }
        let (registration, refused) = handle.sections(parts);
        registrations.push(registration);
        for (at, error) in refused {
            problems.push(refused_problem(file, &layer, specs[at], &error));
        }
    }
    if problems.is_empty() {
        Ok(registrations)
    } else {
        Err(problems)
    }
}

/// One section of a layer, to register: with its own `order`, or with
/// the order of the section it shadows (of `origins`, by name); either
/// way bound to the tool the shadowed section is bound to, and complete
/// when it is.
fn section_part(
    deployment: &Deployment,
    layer: &Layer<'_>,
    origins: &HashMap<&str, &SectionOrigin>,
    section: &SectionSpec,
) -> Result<PromptSection, Problem> {
    let file = &deployment.file;
    let name = section.name.get_ref();
    let shadowed = origins.get(name.as_str()).copied();
    let order = match (&section.order, shadowed) {
        (Some(order), _) => *order.get_ref(),
        (None, Some(shadowed)) => shadowed.order,
        (None, None) => {
            // In render order, as the help lists them.
            let mut known: Vec<&SectionOrigin> = origins.values().copied().collect();
            known.sort_by_key(|origin| (origin.order, origin.name.as_str()));
            let names: Vec<&str> = known.iter().map(|origin| origin.name.as_str()).collect();
            let mut help = format!(
                "give it an `order` to add a new section, or shadow one of the sections {} has: {}",
                layer.outer,
                quoted_list(&names)
            );
            if let Some(closest) = closest(name, &names) {
                help = format!("did you mean `{closest}`? {help}");
            }
            return Err(file
                .problem(format!(
                    "section `{name}` of {} shadows no section and has no `order`",
                    layer.whose
                ))
                .label(section.name.span(), "no such section")
                .help(help));
        }
    };
    let (line, _) = file.position(section.name.span().start);
    let owner = Owner::new(
        "deployment",
        format!("{}.sections[{name}]", layer.path),
        file.name().to_owned(),
        u32::try_from(line).unwrap_or(u32::MAX),
    );
    let mut part =
        PromptSection::new(name.clone(), order, section.text.get_ref().clone()).owned_by(owner);
    if let Some(tool) = shadowed.and_then(|shadowed| shadowed.tool.clone()) {
        part = part.bound_to_tool(tool);
    }
    if shadowed.is_some_and(|shadowed| shadowed.complete) {
        part = part.complete();
    }
    Ok(part)
}

/// The problem of a `section` of `layer` the registry refused.
fn refused_problem(
    file: &SourceFile,
    layer: &Layer<'_>,
    section: &SectionSpec,
    error: &RegistryError,
) -> Problem {
    let (span, label) = match error {
        RegistryError::InvalidSectionName { .. }
        | RegistryError::Duplicate {
            kind: NameKind::Section,
            ..
        } => (section.name.span(), "this name"),
        _ => (section.text.span(), "this text"),
    };
    file.problem(format!("{}: {error}", layer.whose))
        .label(span, label)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::SourceFile;

    const DEPLOYMENT: &str = r#"
[adapter.openai]
base_url = "http://127.0.0.1:9/v1"
model = "m"

[[agents]]
id = "minimal"
persona = "x"
[[agents.sections]]
name = "only"
text = "Only this, for this agent."
"#;

    /// A deployment section that shadows a complete section is complete
    /// too, as it keeps the shadowed one's order and tool binding.
    #[test]
    fn a_shadow_of_a_complete_section_is_complete() {
        let deployment = Deployment::parse(SourceFile::new("dsh.toml", DEPLOYMENT), None, &[])
            .expect("the deployment parses");
        let prompt = SystemPrompt::empty();
        let _only = prompt
            .section(PromptSection::new("only", 7, "Only this.").complete())
            .expect("registers");
        let _layers = register_layers(&prompt, &ToolRegistry::new(), &deployment)
            .expect("the layers register");

        let origins = section_origins(&prompt, &Scope::new([ScopeId::agent("minimal")]));
        let only = origins
            .iter()
            .find(|origin| origin.name == "only")
            .expect("the section");
        assert_eq!(only.layer, Some(ScopeId::agent("minimal")));
        assert_eq!((only.order, only.complete), (7, true));
    }
}
