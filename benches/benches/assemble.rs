//! `assemble` + `render_prompt` against minijinja, handlebars and the floor,
//! on the shared workloads W1, W2 and W3 (`../shared/bench/`).
//!
//! ```text
//! cargo bench -p dsh-benches --bench assemble
//! ```
//!
//! Every implementation is benchmarked in one criterion group, `prompt`,
//! with ids `<implementation>/<workload>`, so the report shows them side by
//! side. Before timing, the bench checks once that all of them produce
//! byte-identical text (and that both engines really are strict), and
//! prints each workload's output length.
//!
//! On 64-bit Linux the same benchmarks then run again as `prompt_cpu`,
//! measured in CPU time of the benchmark thread instead of wall time: on a
//! machine with more runnable threads than cores, wall time also counts the
//! time spent waiting for a core. Set `DSH_BENCH_WALL_ONLY=1` to skip them.
//!
//! - `dsh`: `prompt.assemble(&cx)` then `render_prompt(&assembly)`, on a
//!   registry holding the workload's sections (fixed text), one provider per
//!   variable (returning its value, kept as a shared `Text`), and one tool
//!   provider returning a clone of a prebuilt `Vec<Arc<ToolSchema>>`.
//! - `dsh_scoped`: the same registry seen through three layers (global →
//!   preset → agent), the preset and the agent each shadowing a section and
//!   the agent a variable with the same text.
//! - `dsh_changing`: the same registry, its first variable changing value
//!   at every assembly (a render remembers nothing, so this costs what
//!   `dsh` costs; it stays as the history's comparison point).
//! - `minijinja`: strict undefined behaviour, the section texts joined by a
//!   blank line into one precompiled template, rendered with a prebuilt
//!   context `Value`.
//! - `handlebars`: strict mode, no HTML escaping, the same joined template
//!   pre-registered, rendered with a prebuilt `Context`.
//! - `floor`: the rendered section texts, computed once, concatenated into
//!   one `String` of the exact capacity, plus a clone of the tool `Vec` of
//!   `Arc` (so the floor pays for the tools too).
//!
//! One joined template is faster than one template per section for both
//! engines; set `DSH_BENCH_VARIANTS=1` to also measure the per-section
//! variants (`minijinja_per_section`, `handlebars_per_section`), the two
//! halves of `dsh` (`dsh_assemble_only`, `dsh_render_only`), and what the
//! engines do not do, tools: `dsh_no_tools` (the same registry with a tool
//! provider that returns no tools) and `floor_text_only` (the floor without
//! the clone of the tool `Vec`).
//!
//! Workloads are read from `$CARGO_MANIFEST_DIR/../../shared/bench`, or from
//! `$DSH_BENCH_DIR` when that directory has no `W1.json`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::measurement::Measurement;
use criterion::{Criterion, Throughput};
use dsh_benches::{Workload, WorkloadPrompt};
use dsh_system_prompt::inspect::render_prompt_with_spans;
use dsh_system_prompt::{AssembleContext, PromptAssembly, ToolSchema, render_prompt};

const WORKLOADS: [&str; 3] = ["W1", "W2", "W3"];
const SEPARATOR: &str = "\n\n";
/// The name of the joined template; no section name contains `<`.
const JOINED: &str = "<joined>";

/// The joined template for the two template engines: the original texts
/// (`{{name}}` is valid jinja and handlebars), joined by a blank line.
fn joined_source(workload: &Workload) -> String {
    let texts: Vec<&str> = workload.sections.iter().map(|s| s.text.as_str()).collect();
    texts.join(SEPARATOR)
}

/// The workload's registry, and the context every step assembles with.
struct Dsh {
    registry: WorkloadPrompt,
    cx: AssembleContext,
}

impl Dsh {
    fn new(workload: &Workload, tools: &[Arc<ToolSchema>]) -> Self {
        Self {
            registry: WorkloadPrompt::new(workload, tools),
            cx: AssembleContext::default(),
        }
    }

    /// The same registry, its first variable changing at every assembly
    /// ([`WorkloadPrompt::changing`]).
    fn changing(workload: &Workload, tools: &[Arc<ToolSchema>]) -> Self {
        Self {
            registry: WorkloadPrompt::changing(workload, tools),
            cx: AssembleContext::default(),
        }
    }

    /// The same registry seen through three layers, with shadows
    /// ([`WorkloadPrompt::with_layers`]).
    fn scoped(workload: &Workload, tools: &[Arc<ToolSchema>]) -> Self {
        let mut registry = WorkloadPrompt::new(workload, tools);
        let cx = registry.with_layers(workload);
        Self { registry, cx }
    }

    fn assemble(&self) -> PromptAssembly {
        self.registry.prompt.assemble(&self.cx)
    }

    fn run(&self) -> String {
        render_prompt(&self.assemble()).expect("render")
    }
}

struct Jinja {
    env: minijinja::Environment<'static>,
    context: minijinja::Value,
}

impl Jinja {
    fn new(workload: &Workload) -> Self {
        let mut env = minijinja::Environment::new();
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
        env.set_syntax(
            minijinja::syntax::SyntaxConfig::builder()
                .keep_trailing_newline(true)
                .build()
                .expect("syntax"),
        );
        env.add_template_owned(JOINED.to_owned(), joined_source(workload))
            .expect("compile joined template");
        for section in &workload.sections {
            env.add_template_owned(section.name.clone(), section.text.clone())
                .expect("compile section template");
        }
        let context = minijinja::Value::from_pairs(
            workload
                .variables
                .iter()
                .map(|(name, value)| (name.clone(), value.clone())),
        );
        Self { env, context }
    }

    fn run(&self, template: &minijinja::Template<'_, '_>) -> String {
        template.render(self.context.clone()).expect("render")
    }

    fn run_per_section(&self, templates: &[minijinja::Template<'_, '_>]) -> String {
        let mut out = String::new();
        for (at, template) in templates.iter().enumerate() {
            if at > 0 {
                out.push_str(SEPARATOR);
            }
            out.push_str(&template.render(self.context.clone()).expect("render"));
        }
        out
    }
}

struct Hbs {
    registry: handlebars::Handlebars<'static>,
    context: handlebars::Context,
    names: Vec<String>,
}

impl Hbs {
    fn new(workload: &Workload) -> Self {
        let mut registry = handlebars::Handlebars::new();
        registry.set_strict_mode(true);
        registry.register_escape_fn(handlebars::no_escape);
        registry
            .register_template_string(JOINED, joined_source(workload))
            .expect("compile joined template");
        let mut names = Vec::new();
        for section in &workload.sections {
            registry
                .register_template_string(&section.name, &section.text)
                .expect("compile section template");
            names.push(section.name.clone());
        }
        let context = handlebars::Context::wraps(&workload.variables).expect("context");
        Self {
            registry,
            context,
            names,
        }
    }

    fn run(&self) -> String {
        self.registry
            .render_with_context(JOINED, &self.context)
            .expect("render")
    }

    fn run_per_section(&self) -> String {
        let mut out = String::new();
        for (at, name) in self.names.iter().enumerate() {
            if at > 0 {
                out.push_str(SEPARATOR);
            }
            let text = self
                .registry
                .render_with_context(name, &self.context)
                .expect("render");
            out.push_str(&text);
        }
        out
    }
}

struct Floor {
    pieces: Vec<String>,
    capacity: usize,
    tools: Vec<Arc<ToolSchema>>,
}

impl Floor {
    /// The rendered section texts, computed once, outside any timing.
    fn new(workload: &Workload, tools: &[Arc<ToolSchema>]) -> Self {
        let pieces: Vec<String> = workload
            .sections
            .iter()
            .map(|section| {
                dsh_system_prompt::template::interpolate(
                    &dsh_benches::to_dsh(&section.text),
                    |reference| {
                        workload
                            .variables
                            .get(reference.name)
                            .map(String::as_str)
                            .ok_or(reference.name.to_owned())
                    },
                )
                .expect("interpolate")
            })
            .filter(|piece| !piece.is_empty())
            .collect();
        let capacity = pieces.iter().map(String::len).sum::<usize>()
            + SEPARATOR.len() * pieces.len().saturating_sub(1);
        Self {
            pieces,
            capacity,
            tools: tools.to_vec(),
        }
    }

    fn run(&self) -> (String, Vec<Arc<ToolSchema>>) {
        (self.text(), self.tools.clone())
    }

    fn text(&self) -> String {
        let mut out = String::with_capacity(self.capacity);
        for (at, piece) in self.pieces.iter().enumerate() {
            if at > 0 {
                out.push_str(SEPARATOR);
            }
            out.push_str(piece);
        }
        out
    }
}

/// One workload, with every implementation ready to run.
struct Fixture {
    name: &'static str,
    dsh: Dsh,
    /// `dsh` through three layers, with shadows.
    dsh_scoped: Dsh,
    /// `dsh` with a value that changes at every assembly.
    dsh_changing: Dsh,
    /// `dsh` whose tool provider returns no tools.
    dsh_no_tools: Dsh,
    jinja: Jinja,
    hbs: Hbs,
    floor: Floor,
    /// The prompt's length in bytes, for throughput.
    bytes: u64,
}

impl Fixture {
    /// Builds every implementation and checks, once and outside any timing,
    /// that they all produce the same bytes.
    fn new(name: &'static str) -> Self {
        let workload = Workload::load(name);
        let tools: Vec<Arc<ToolSchema>> = workload.tools.iter().cloned().map(Arc::new).collect();
        let mut fixture = Self {
            name,
            dsh: Dsh::new(&workload, &tools),
            dsh_scoped: Dsh::scoped(&workload, &tools),
            dsh_changing: Dsh::changing(&workload, &tools),
            dsh_no_tools: Dsh::new(&workload, &[]),
            jinja: Jinja::new(&workload),
            hbs: Hbs::new(&workload),
            floor: Floor::new(&workload, &tools),
            bytes: 0,
        };

        // Both engines are strict: an unknown name is an error.
        let jinja = &fixture.jinja;
        assert!(
            jinja
                .env
                .render_str("{{ nope }}", jinja.context.clone())
                .is_err()
        );
        let hbs = &fixture.hbs;
        assert!(
            hbs.registry
                .render_template_with_context("{{nope}}", &hbs.context)
                .is_err()
        );

        let expected = fixture.dsh.run();
        assert_eq!(
            fixture.dsh_scoped.run(),
            expected,
            "{name}: dsh through three layers"
        );
        // Two renders in a row differ, the first is the workload's prompt
        // and the second as long.
        let (first, second) = (fixture.dsh_changing.run(), fixture.dsh_changing.run());
        assert_eq!(first, expected, "{name}: dsh, value changing");
        assert_ne!(second, expected, "{name}: dsh, value changing");
        assert_eq!(second.len(), expected.len(), "{name}: dsh, value changing");
        let joined = fixture.jinja.env.get_template(JOINED).expect("template");
        let sections = fixture.jinja.section_templates(&workload);
        assert_eq!(fixture.jinja.run(&joined), expected, "{name}: minijinja");
        assert_eq!(
            fixture.jinja.run_per_section(&sections),
            expected,
            "{name}: minijinja per section"
        );
        assert_eq!(fixture.hbs.run(), expected, "{name}: handlebars");
        assert_eq!(
            fixture.hbs.run_per_section(),
            expected,
            "{name}: handlebars per section"
        );
        assert_eq!(
            fixture.dsh_no_tools.run(),
            expected,
            "{name}: dsh without tools"
        );
        let (floor_text, floor_tools) = fixture.floor.run();
        assert_eq!(floor_text, expected, "{name}: floor");
        assert_eq!(floor_tools.len(), workload.tools.len());

        let assembly = fixture.dsh.assemble();
        // The spans variant renders section by section: the same text.
        let spans = render_prompt_with_spans(&assembly).expect("render with spans");
        assert_eq!(spans.text, expected, "{name}: render_prompt_with_spans");
        assert_eq!(spans.sections.len(), fixture.floor.pieces.len());
        assert_eq!(assembly.tools.len(), workload.tools.len());
        assert_eq!(assembly.variables.len(), workload.variables.len());
        drop(assembly);
        if name == "W2" {
            assert_eq!(expected.len(), 218_292, "W2 output length per README");
        }
        report(
            name,
            workload.sections.len(),
            workload.variables.len(),
            workload.tools.len(),
            expected.len(),
        );
        drop(joined);
        drop(sections);
        fixture.bytes = expected.len() as u64;
        fixture
    }
}

impl Jinja {
    fn section_templates(&self, workload: &Workload) -> Vec<minijinja::Template<'_, '_>> {
        workload
            .sections
            .iter()
            .map(|s| self.env.get_template(&s.name).expect("template"))
            .collect()
    }
}

#[allow(clippy::print_stdout, reason = "the bench reports output lengths")]
fn report(workload: &str, sections: usize, variables: usize, tools: usize, bytes: usize) {
    println!(
        "{workload}: {sections} sections, {variables} variables, {tools} tools -> {bytes} bytes of prompt (all implementations byte-identical)"
    );
}

/// Benchmarks every implementation on every workload, in one group.
fn bench<M: Measurement>(c: &mut Criterion<M>, group: &str, fixtures: &[Fixture]) {
    let variants = std::env::var_os("DSH_BENCH_VARIANTS").is_some();
    let mut group = c.benchmark_group(group);
    for fixture in fixtures {
        let Fixture {
            name,
            dsh,
            dsh_scoped,
            dsh_changing,
            dsh_no_tools,
            jinja,
            hbs,
            floor,
            bytes,
        } = fixture;
        let joined = jinja.env.get_template(JOINED).expect("template");
        group.throughput(Throughput::Bytes(*bytes));
        group.bench_function(format!("dsh/{name}"), |b| b.iter(|| dsh.run()));
        group.bench_function(format!("dsh_scoped/{name}"), |b| {
            b.iter(|| dsh_scoped.run())
        });
        group.bench_function(format!("dsh_changing/{name}"), |b| {
            b.iter(|| dsh_changing.run())
        });
        group.bench_function(format!("minijinja/{name}"), |b| {
            b.iter(|| jinja.run(black_box(&joined)))
        });
        group.bench_function(format!("handlebars/{name}"), |b| b.iter(|| hbs.run()));
        group.bench_function(format!("floor/{name}"), |b| {
            b.iter(|| black_box(floor).run())
        });
        if variants {
            group.bench_function(format!("dsh_assemble_only/{name}"), |b| {
                b.iter(|| dsh.assemble())
            });
            let assembly = dsh.assemble();
            group.bench_function(format!("dsh_render_only/{name}"), |b| {
                b.iter(|| render_prompt(black_box(&assembly)).expect("render"))
            });
            let sections: Vec<_> = hbs
                .names
                .iter()
                .map(|name| jinja.env.get_template(name).expect("template"))
                .collect();
            group.bench_function(format!("minijinja_per_section/{name}"), |b| {
                b.iter(|| jinja.run_per_section(black_box(&sections)))
            });
            group.bench_function(format!("handlebars_per_section/{name}"), |b| {
                b.iter(|| hbs.run_per_section())
            });
            group.bench_function(format!("dsh_no_tools/{name}"), |b| {
                b.iter(|| dsh_no_tools.run())
            });
            group.bench_function(format!("floor_text_only/{name}"), |b| {
                b.iter(|| black_box(floor).text())
            });
        }
    }
    group.finish();
}

fn config() -> Criterion {
    dsh_benches::criterion(30, Duration::from_secs(3))
}

fn main() {
    let fixtures: Vec<Fixture> = WORKLOADS.into_iter().map(Fixture::new).collect();

    let mut wall = config().configure_from_args();
    bench(&mut wall, "prompt", &fixtures);

    #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
    if std::env::var_os("DSH_BENCH_WALL_ONLY").is_none() {
        let mut cpu = config()
            .with_measurement(cpu_time::CpuTime)
            .configure_from_args();
        bench(&mut cpu, "prompt_cpu", &fixtures);
    }

    wall.final_summary();
}

/// A criterion measurement of the benchmark thread's CPU time
/// (`CLOCK_THREAD_CPUTIME_ID`), user and system. On a shared machine with
/// more runnable threads than cores, wall time also counts the time the
/// thread waited for a core; CPU time does not.
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
mod cpu_time {
    use std::time::Duration;

    use criterion::measurement::{Measurement, ValueFormatter, WallTime};

    /// `struct timespec` on 64-bit Linux.
    #[repr(C)]
    struct Timespec {
        tv_sec: i64,
        tv_nsec: i64,
    }

    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;

    unsafe extern "C" {
        fn clock_gettime(clock: i32, time: *mut Timespec) -> i32;
    }

    fn now() -> Duration {
        let mut time = Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `time` is a valid, writable `struct timespec`, and the
        // clock id is one Linux defines.
        let status = unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut time) };
        assert_eq!(status, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
        Duration::new(time.tv_sec as u64, time.tv_nsec as u32)
    }

    /// The CPU time of the benchmark thread.
    pub(super) struct CpuTime;

    static FORMATTER: WallTime = WallTime;

    impl Measurement for CpuTime {
        type Intermediate = Duration;
        type Value = Duration;

        fn start(&self) -> Duration {
            now()
        }

        fn end(&self, start: Duration) -> Duration {
            now().saturating_sub(start)
        }

        fn add(&self, a: &Duration, b: &Duration) -> Duration {
            *a + *b
        }

        fn zero(&self) -> Duration {
            Duration::ZERO
        }

        fn to_f64(&self, value: &Duration) -> f64 {
            value.as_nanos() as f64
        }

        fn formatter(&self) -> &dyn ValueFormatter {
            // Values are nanoseconds, as wall time's are.
            FORMATTER.formatter()
        }
    }
}
