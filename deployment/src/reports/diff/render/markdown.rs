//! `dsh diff --format markdown`: the comparison as a pull-request comment
//! (GitHub-flavoured markdown) — a table of the changed sections, the
//! variables, a table of the changed tools, the cache break with its
//! estimate, the totals, then the word diffs in collapsible blocks.

use std::fmt::Write as _;

use crate::reports::diff::{Cost, PromptDiff, SectionChange, ToolChange, WordRun};

use super::{
    change_name, cost, counts, inline_words, same_line, section_note, section_owners, sides_of,
    tool_owners,
};

/// The comment; one line when the prefixes are the same.
pub(in crate::reports::diff) fn markdown(diff: &PromptDiff) -> String {
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
    word_diffs(&mut out, diff);
    out
}

/// A table cell: its pipes escaped and its lines joined, so one value
/// stays one cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// A row of a markdown table.
fn table_row(out: &mut String, cells: &[String]) {
    let cells: Vec<String> = cells.iter().map(|text| cell(text)).collect();
    let _ = writeln!(out, "| {} |", cells.join(" | "));
}

/// `old → new`, or the one when they are the same.
fn both(old: &str, new: &str) -> String {
    if old == new {
        format!("`{new}`")
    } else {
        format!("`{old}` → `{new}`")
    }
}

fn header(out: &mut String, diff: &PromptDiff) {
    let (old, new) = (&diff.old, &diff.new);
    let _ = writeln!(
        out,
        "### Prompt change: agent {} ({})\n",
        both(&old.agent, &new.agent),
        both(&old.model, &new.model)
    );
    let _ = writeln!(
        out,
        "`{}` → `{}`, tokens counted with `{}` on both sides.\n",
        old.path, new.path, diff.tokenizer
    );
}

fn tokens_of(old: Option<usize>, new: Option<usize>) -> (String, String) {
    let show = |tokens: Option<usize>| tokens.map_or_else(|| "–".to_owned(), |n| n.to_string());
    let delta = super::signed(old.unwrap_or(0), new.unwrap_or(0));
    (format!("{} → {}", show(old), show(new)), delta)
}

fn sections(out: &mut String, diff: &PromptDiff) {
    let sections = &diff.sections;
    let _ = writeln!(
        out,
        "**Sections**: {}.\n",
        counts(
            sections.changes.iter().map(|c| c.change),
            sections.unchanged
        )
    );
    if sections.changes.is_empty() {
        return;
    }
    let _ = writeln!(out, "| change | section | owner | tokens | Δ | note |");
    let _ = writeln!(out, "|---|---|---|---:|---:|---|");
    for change in &sections.changes {
        section_row(out, change);
    }
    out.push('\n');
}

fn section_row(out: &mut String, change: &SectionChange) {
    let (old, new) = (change.old.as_ref(), change.new.as_ref());
    let (tokens, delta) = tokens_of(old.map(|s| s.tokens), new.map(|s| s.tokens));
    table_row(
        out,
        &[
            change_name(change.change).to_owned(),
            format!("`{}`", change.name),
            section_owners(change),
            tokens,
            delta,
            section_note(change),
        ],
    );
}

fn variables(out: &mut String, diff: &PromptDiff) {
    if diff.variables.is_empty() {
        return;
    }
    let value = |value: &Option<String>| match value {
        Some(value) => format!("`{value}`"),
        None => "(no value)".to_owned(),
    };
    let _ = writeln!(out, "**Variables**\n");
    let _ = writeln!(out, "| variable | old | new | used by |");
    let _ = writeln!(out, "|---|---|---|---|");
    for variable in &diff.variables {
        let used_by: Vec<String> = (variable.used_by.iter())
            .map(|name| format!("`{name}`"))
            .collect();
        table_row(
            out,
            &[
                format!("`<<{}>>`", variable.name),
                value(&variable.old),
                value(&variable.new),
                used_by.join(", "),
            ],
        );
    }
    out.push('\n');
}

fn tools(out: &mut String, diff: &PromptDiff) {
    let tools = &diff.tools;
    let _ = writeln!(
        out,
        "**Tools**: {}.\n",
        counts(tools.changes.iter().map(|c| c.change), tools.unchanged)
    );
    if tools.changes.is_empty() {
        return;
    }
    let _ = writeln!(out, "| change | tool | owner | tokens | Δ | what |");
    let _ = writeln!(out, "|---|---|---|---:|---:|---|");
    for change in &tools.changes {
        tool_row(out, change);
    }
    out.push('\n');
}

fn tool_row(out: &mut String, change: &ToolChange) {
    let (old, new) = (change.old.as_ref(), change.new.as_ref());
    let (tokens, delta) = tokens_of(old.map(|s| s.tokens), new.map(|s| s.tokens));
    let mut what = Vec::new();
    if change.description.is_some() {
        what.push("description".to_owned());
    }
    for schema in &change.schema {
        what.push(format!("`{}` {}", schema.path, change_name(schema.change)));
    }
    if let (true, Some(old), Some(new)) = (change.moved, old, new) {
        what.push(format!("position {} → {}", old.position, new.position));
    }
    table_row(
        out,
        &[
            change_name(change.change).to_owned(),
            format!("`{}`", change.name),
            tool_owners(change),
            tokens,
            delta,
            what.join("; "),
        ],
    );
}

fn cache(out: &mut String, diff: &PromptDiff) {
    let Some(cache) = &diff.cache else { return };
    let place = match (&cache.section, &cache.tool) {
        (Some(section), _) => format!("in the system prompt, in section `{section}`"),
        (None, Some(tool)) => format!("in the tools, in tool `{tool}`"),
        (None, None) => "where the old prefix ends".to_owned(),
    };
    let _ = writeln!(
        out,
        "**Cache**: the prefix breaks at byte {} {place}. A cache warmed by the old prefix still serves the {} tokens before it, and no longer the {} after it.\n",
        cache.byte, cache.kept.tokens, cache.lost.tokens
    );
    let _ = writeln!(
        out,
        "*An estimate*, in base-price input tokens, of the prefix alone (no conversation), with the old prefix warm in the cache, for a session of {} requests:\n",
        cache.estimate.requests
    );
    let _ = writeln!(
        out,
        "| prices | cache read | cache write | first request | session |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|");
    let both = |cost_of: &Cost| format!("{} → {}", cost(cost_of.old), cost(cost_of.new));
    for priced in &cache.estimate.pricings {
        table_row(
            out,
            &[
                priced.pricing.name.to_owned(),
                format!("{}×", cost(priced.pricing.cache_read)),
                format!("{}×", cost(priced.pricing.cache_write)),
                both(&priced.first_request),
                both(&priced.session),
            ],
        );
    }
    out.push('\n');
}

fn totals(out: &mut String, diff: &PromptDiff) {
    let totals = &diff.totals;
    let _ = writeln!(out, "**Totals**\n");
    let _ = writeln!(out, "| part | bytes | tokens |");
    let _ = writeln!(out, "|---|---:|---:|");
    for (name, sides) in [
        ("system prompt", &totals.system_prompt),
        ("tools", &totals.tools),
        ("prefix", &totals.prefix),
    ] {
        table_row(
            out,
            &[
                name.to_owned(),
                sides_of(sides, false),
                sides_of(sides, true),
            ],
        );
    }
}

/// Each changed section's and description's word diff, collapsed.
fn word_diffs(out: &mut String, diff: &PromptDiff) {
    let sections = (diff.sections.changes.iter()).filter_map(|change| {
        let name = html(&change.name);
        Some((
            format!("section <code>{name}</code>"),
            change.words.as_ref()?,
        ))
    });
    let tools = (diff.tools.changes.iter()).filter_map(|change| {
        let name = html(&change.name);
        Some((
            format!("description of tool <code>{name}</code>"),
            change.description.as_ref()?,
        ))
    });
    for (summary, words) in sections.chain(tools) {
        details(out, &summary, words);
    }
}

/// `text` escaped for HTML.
fn html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A collapsible block of one word diff, fenced with more backticks than
/// the text has in a row.
fn details(out: &mut String, summary: &str, words: &[WordRun]) {
    let text = inline_words(words);
    let longest = (text.split(|c| c != '`')).map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let _ = writeln!(
        out,
        "\n<details><summary>{summary}: word diff</summary>\n\n{fence}text\n{text}\n{fence}\n\n</details>"
    );
}
