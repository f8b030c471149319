//! Parse (and, for valid templates, render) throughput.
//!
//! Every case reports bytes per second of template source: the parser is
//! linear, so 1 KiB and 1 MiB of the same text, and 1 MiB of pathological
//! patterns, should all show bytes/s of the same order. A quadratic path
//! would show as the 1 MiB cases falling by orders of magnitude.
//!
//! Run with `cargo bench -p dsh-benches --bench parse`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput};
use dsh_prompt_template::{Reference, Template, escape_literal};

const KIB: usize = 1024;
const MIB: usize = 1024 * 1024;

/// A paragraph of system-prompt text as the registry sees it: prose,
/// references, an escaped heredoc and C++ stream, multi-byte punctuation.
const PARAGRAPH: &str = "You are a coding agent running on <<model>>. Your working directory \
is <<cwd>>; every path you read or write is relative to it unless it is absolute.\n\
When a command fails, read its output — the `[exit code: N]` marker is on every result — \
and investigate before moving on. To write a file from the shell, use a heredoc: \
`cat > notes.md \\<<EOF`, then the text, then `EOF`. In C++, `std::cout \\<< value` prints. \
Prefer the read tool to `cat` for files under <<cwd>>; it numbers lines « comme ça ».\n\n";

/// `unit` repeated until the result is at least `len` bytes (whole units
/// only, so every repetition stays a valid template).
fn repeat_to(unit: &str, len: usize) -> String {
    unit.repeat(len.div_ceil(unit.len()))
}

/// The values of the references in [`PARAGRAPH`].
fn lookup(reference: &Reference<'_>) -> Result<&'static str, String> {
    match reference.name {
        "model" => Ok("gpt-5"),
        "cwd" => Ok("/home/dev/projects/dsh"),
        other => Err(format!("no variable `{other}`")),
    }
}

/// Parses and renders a valid template; panics if it is not valid, since
/// that would be a broken benchmark, not a measurement.
fn parse_and_render(source: &str) -> String {
    let template = Template::parse(source).expect("benchmark template is valid");
    template
        .render(source, lookup)
        .expect("benchmark variables are defined")
}

/// Benchmarks `run` on each case `(name, size label, source)` in the
/// group `group`, in bytes per second of source.
fn bench_cases<T>(
    c: &mut Criterion,
    group: &str,
    cases: &[(&str, &str, String)],
    run: impl Fn(&str) -> T,
) {
    let mut group = c.benchmark_group(group);
    for (name, label, source) in cases {
        group.throughput(Throughput::Bytes(source.len() as u64));
        group.bench_with_input(BenchmarkId::new(*name, label), source, |b, source| {
            b.iter(|| run(black_box(source)));
        });
    }
    group.finish();
}

/// A size and its label in benchmark ids.
const SIZES: [(&str, usize); 2] = [("64KiB", 64 * KIB), ("1MiB", MIB)];

fn bench_valid(c: &mut Criterion) {
    let mut cases = vec![
        ("prompt", "1KiB", repeat_to(PARAGRAPH, KIB)),
        ("prompt", "64KiB", repeat_to(PARAGRAPH, 64 * KIB)),
        ("prompt", "1MiB", repeat_to(PARAGRAPH, MIB)),
    ];
    for (label, size) in SIZES {
        // `<<` with no `>>` anywhere after it: all literal.
        cases.push(("openings", label, "<<".repeat(size / 2)));
        // `<<a` repeated, no `>>`: every `<<` stops at the next `<`.
        cases.push(("open_name", label, repeat_to("<<a", size)));
        // Dense references: one every seven bytes.
        cases.push(("references", label, repeat_to("<<cwd>>", size)));
        // Dense escapes: one every three bytes.
        cases.push(("escapes", label, repeat_to("\\<<", size)));
    }
    bench_cases(c, "parse_render", &cases, parse_and_render);
}

fn bench_invalid(c: &mut Criterion) {
    let with_close = |unit: &str, size| {
        let mut source = repeat_to(unit, size);
        source.push_str(">>");
        source
    };
    let mut cases = Vec::new();
    for (label, size) in SIZES {
        // Every `<<` opens no complete group while a `>>` follows at the
        // very end: a naive "is there a `>>` later?" scan per `<<` would be
        // quadratic here.
        cases.push(("open_name_close", label, with_close("<<a", size)));
        // `<<a>` is never a complete group; the trailing `>>` makes the
        // first `<<` malformed, reported as one error to the end.
        cases.push(("open_single_close", label, with_close("<<a>", size)));
        // A malformed group every six bytes: every error is collected,
        // with its position computed in one forward pass.
        cases.push(("malformed", label, repeat_to("<<Ab>>", size)));
        // An unclosed opening every nine bytes.
        cases.push(("unclosed", label, repeat_to("<<<ab>>> ", size)));
    }
    bench_cases(c, "parse_errors", &cases, |source| {
        Template::parse(source)
            .expect_err("benchmark template is invalid")
            .len()
    });
}

fn bench_escape(c: &mut Criterion) {
    let source = repeat_to(PARAGRAPH, MIB).replace("\\<<", "<<");
    let mut group = c.benchmark_group("escape_literal");
    group.throughput(Throughput::Bytes(source.len() as u64));
    group.bench_function("prompt_1MiB", |b| {
        b.iter(|| escape_literal(black_box(&source)).len());
    });
    group.finish();
}

fn main() {
    dsh_benches::main(
        20,
        Duration::from_secs(3),
        &[bench_valid, bench_invalid, bench_escape],
    );
}
