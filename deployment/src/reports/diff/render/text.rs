//! `dsh diff --format text`: the comparison for a terminal — the sides,
//! then each changed section and tool with its owners, tokens and word
//! diff, the variables, the cache break and its estimate, the totals.

use std::fmt::Write as _;

use crate::reports::diff::{Change, PromptDiff, SectionChange, SourceKind, ToolChange};

use super::{
    change_name, change_of, cost, counts, inline_words, same_line, section_note, section_owners,
    sides_of, tool_owners,
};
use crate::reports::table::{row, table};

/// The report; one line when the prefixes are the same.
pub(in crate::reports::diff) fn text(diff: &PromptDiff) -> String {
    if diff.same {
        return same_line(diff);
    }
    let mut out = String::new();
    header(&mut out, diff);
    sections(&mut out, diff);
    variables(&mut out, diff);
    tools(&mut out, diff);
    cache(&mut out, diff);
    totals(&mut out, diff);
    out
}

/// The agent, the sides, the working directory and the tokenizer.
fn header(out: &mut String, diff: &PromptDiff) {
    let (old, new) = (&diff.old, &diff.new);
    let kind = |kind: SourceKind| match kind {
        SourceKind::Deployment => "deployment",
        SourceKind::Dump => "dump of `dsh prompt --format json`",
    };
    let both = |old: &str, new: &str| {
        if old == new {
            new.to_owned()
        } else {
            format!("{old} → {new}")
        }
    };
    let cwd = |cwd: &Option<String>| cwd.clone().unwrap_or_else(|| "(none)".to_owned());
    let _ = writeln!(out, "agent      {}", both(&old.agent, &new.agent));
    let _ = writeln!(out, "model      {}", both(&old.model, &new.model));
    let _ = writeln!(out, "old        {} ({})", old.path, kind(old.kind));
    let _ = writeln!(out, "new        {} ({})", new.path, kind(new.kind));
    let _ = writeln!(out, "cwd        {}", both(&cwd(&old.cwd), &cwd(&new.cwd)));
    let _ = writeln!(
        out,
        "tokenizer  {} (the new side's, both sides)",
        diff.tokenizer
    );
}

/// A part's tokens on the sides that have it.
fn part_tokens(old: Option<usize>, new: Option<usize>) -> String {
    match (old, new) {
        (Some(old), Some(new)) => format!("{} tokens", change_of(old, new)),
        (None, Some(new)) => format!("{new} tokens (+{new})"),
        (Some(old), None) => format!("{old} tokens (-{old})"),
        (None, None) => String::new(),
    }
}

/// A multi-line text indented under a change.
fn indented(text: &str) -> String {
    format!("    {}", text.replace('\n', "\n    "))
}

fn sections(out: &mut String, diff: &PromptDiff) {
    let sections = &diff.sections;
    let _ = writeln!(
        out,
        "\nsections: {}",
        counts(
            sections.changes.iter().map(|c| c.change),
            sections.unchanged
        )
    );
    for change in &sections.changes {
        section(out, change);
    }
}

/// The first line of a changed section or tool: what happened, its name,
/// its tokens, and a note when there is one.
fn headline(out: &mut String, change: Change, name: &str, tokens: &str, note: &str) {
    let note = if note.is_empty() {
        String::new()
    } else {
        format!("; {note}")
    };
    let _ = writeln!(out, "  {:<8} {name}  {tokens}{note}", change_name(change));
}

fn section(out: &mut String, change: &SectionChange) {
    let (old, new) = (change.old.as_ref(), change.new.as_ref());
    let tokens = part_tokens(old.map(|s| s.tokens), new.map(|s| s.tokens));
    headline(
        out,
        change.change,
        &change.name,
        &tokens,
        &section_note(change),
    );
    let _ = writeln!(out, "    owner  {}", section_owners(change));
    if let Some(words) = &change.words {
        let _ = writeln!(out, "{}", indented(&inline_words(words)));
    }
}

fn variables(out: &mut String, diff: &PromptDiff) {
    if diff.variables.is_empty() {
        return;
    }
    let value = |value: &Option<String>| match value {
        Some(value) => format!("{value:?}"),
        None => "(no value)".to_owned(),
    };
    let _ = writeln!(out, "\nvariables");
    let mut rows = vec![row(["name", "old", "new", "used by"])];
    for variable in &diff.variables {
        let used_by = if variable.used_by.is_empty() {
            "(no section)".to_owned()
        } else {
            variable.used_by.join(", ")
        };
        rows.push(row([
            format!("<<{}>>", variable.name),
            value(&variable.old),
            value(&variable.new),
            used_by,
        ]));
    }
    table(out, &rows, &[]);
}

fn tools(out: &mut String, diff: &PromptDiff) {
    let tools = &diff.tools;
    let _ = writeln!(
        out,
        "\ntools: {}",
        counts(tools.changes.iter().map(|c| c.change), tools.unchanged)
    );
    for change in &tools.changes {
        tool(out, change);
    }
}

fn tool(out: &mut String, change: &ToolChange) {
    let (old, new) = (change.old.as_ref(), change.new.as_ref());
    let mut notes = Vec::new();
    if change.description.is_some() {
        notes.push("description".to_owned());
    }
    if !change.schema.is_empty() {
        notes.push("schema".to_owned());
    }
    if let (true, Some(old), Some(new)) = (change.moved, old, new) {
        notes.push(format!("position {} → {}", old.position, new.position));
    }
    let tokens = part_tokens(old.map(|s| s.tokens), new.map(|s| s.tokens));
    headline(out, change.change, &change.name, &tokens, &notes.join(", "));
    let _ = writeln!(out, "    owner  {}", tool_owners(change));
    if let Some(words) = &change.description {
        let _ = writeln!(out, "    description");
        let _ = writeln!(out, "  {}", indented(&inline_words(words)));
    }
    for schema in &change.schema {
        let path = if schema.path.is_empty() {
            "(the whole schema)"
        } else {
            &schema.path
        };
        let _ = writeln!(out, "    schema {path} {}", change_name(schema.change));
    }
}

fn cache(out: &mut String, diff: &PromptDiff) {
    let Some(cache) = &diff.cache else { return };
    let place = match (&cache.section, &cache.tool) {
        (Some(section), _) => format!("in the system prompt, section `{section}`"),
        (None, Some(tool)) => format!("in the tools, tool `{tool}`"),
        (None, None) => "at the end of the old prefix".to_owned(),
    };
    let _ = writeln!(
        out,
        "\ncache: the prefix breaks at byte {} ({place})",
        cache.byte
    );
    let _ = writeln!(
        out,
        "  kept  {} tokens, {} bytes: a cache warmed by the old prefix still serves them",
        cache.kept.tokens, cache.kept.bytes
    );
    let _ = writeln!(
        out,
        "  lost  {} tokens, {} bytes: it no longer serves them",
        cache.lost.tokens, cache.lost.bytes
    );
    let requests = cache.estimate.requests;
    let _ = writeln!(
        out,
        "  estimate, in base-price input tokens: the prefix alone (no conversation), the old prefix warm in the cache, a session of {requests} requests"
    );
    let mut rows = vec![row(["prices", "read", "write", "first request", "session"])];
    for priced in &cache.estimate.pricings {
        let both = |cost_of: &crate::reports::diff::Cost| {
            format!("{} → {}", cost(cost_of.old), cost(cost_of.new))
        };
        rows.push(row([
            priced.pricing.name.to_owned(),
            format!("{}×", cost(priced.pricing.cache_read)),
            format!("{}×", cost(priced.pricing.cache_write)),
            both(&priced.first_request),
            both(&priced.session),
        ]));
    }
    table(out, &rows, &[]);
}

fn totals(out: &mut String, diff: &PromptDiff) {
    let totals = &diff.totals;
    let _ = writeln!(out, "\ntotals");
    let mut rows = vec![row(["part", "bytes", "tokens"])];
    for (name, sides) in [
        ("system prompt", &totals.system_prompt),
        ("tools", &totals.tools),
        ("prefix", &totals.prefix),
    ] {
        rows.push(row([
            name.to_owned(),
            sides_of(sides, false),
            sides_of(sides, true),
        ]));
    }
    table(out, &rows, &[]);
}
