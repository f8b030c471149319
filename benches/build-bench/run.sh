#!/usr/bin/env bash
# Build-time cost of the macros (issue 3, "Performance").
#
# Generates three crates in a scratch workspace, all depending on
# dsh-system-prompt by path, all with the same 1,000 `&str` consts and one
# variable fn:
#
#   bench-plain      plain consts and a plain fn: the baseline;
#   bench-macros     each const `#[prompt_section(name = …, order = …)]`,
#                    half of the texts referencing `<<bench_value>>`, and
#                    the fn `#[prompt_variable]`;
#   bench-inventory  each const registered by a hand-written
#                    `inventory::submit!` of the same `StaticSection`: the
#                    floor of any macro that registers through inventory;
#   bench-expanded   what the macros expand to for bench-macros, written
#                    out by hand (the marker type, the hidden uniqueness
#                    macros, the `<<name>>` checks, the submissions of
#                    constructor calls): the
#                    code the macros generate, without running them. Keep
#                    it in step with macros/src/expand.rs;
#   bench-identity   each const under an attribute with the same arguments
#                    whose proc macro returns the item unchanged: what
#                    rustc charges for invoking any attribute macro.
#
# Builds every dependency once, then, for each crate, RUNS times (default
# 3): touch its lib.rs and time `cargo build -p <crate>` (then the same for
# `cargo check`), so only that crate is rebuilt. Prints the medians and the
# ratios to bench-plain as a Markdown table.
#
# Usage: benches/build-bench/run.sh            (scratch dir under $TMPDIR)
#        RUNS=5 BENCH_DIR=/tmp/bb benches/build-bench/run.sh
#        OPTIMIZE_MACROS=1 benches/build-bench/run.sh
#            (proc macros built with opt-level 3, as a consumer gets with
#            `[profile.dev.build-override] opt-level = 3`)
#        MEASURE=instructions RUNS=1 benches/build-bench/run.sh
#            (instructions rustc executes, counted by valgrind's
#            cachegrind: deterministic where wall time is noisy)
#        CRATES="bench-macros bench-inventory" COMMANDS=check benches/build-bench/run.sh
#            (only those crates and commands; ratios to bench-plain need
#            bench-plain among the crates)
set -euo pipefail

sections=1000
runs=${RUNS:-3}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dir=${BENCH_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/dsh-build-bench.XXXXXX")}
mkdir -p "$dir"

# section_lines <mode> <index> <order> <reference>: one section's source.
section_lines() {
    local mode=$1 index=$2 order=$3 reference=$4
    echo
    if [[ $mode == macros ]]; then
        echo "#[prompt_section(name = \"bench:section_$index\", order = $order)]"
    fi
    if [[ $mode == identity ]]; then
        echo "#[bench_identity_attr::identity(name = \"bench:section_$index\", order = $order)]"
    fi
    echo "pub const SECTION_$index: &str = \"Guidance number $((10#$index)).$reference\";"
    if [[ $mode == expanded ]]; then
        # The value's block: the uniqueness macro (every bench section has
        # a name), the `<<name>>` check if any, the constructor call of
        # macros/src/expand.rs (`""`: no tool).
        echo '::dsh_system_prompt::__private::inventory::submit! {{'
        unique_macro_lines "section_bench_colon_section__$index"
        if [[ -n $reference ]]; then
            echo '    ::dsh_system_prompt::__private::assert_prompt_variable::<bench_value>();'
        fi
        echo "    ::dsh_system_prompt::__private::fixed_section(\"bench:section_$index\", $order, \"\", SECTION_$index, \"bench-expanded\", ::core::module_path!(), \"SECTION_$index\", \"bench-expanded/src/lib.rs\", $((10#$index * 8 + 12)))"
        echo '}}'
    fi
    if [[ $mode == inventory ]]; then
        echo '::dsh_system_prompt::__private::inventory::submit! {'
        echo '    ::dsh_system_prompt::__private::StaticSection {'
        section_fields "$mode" "$index" "$order"
        echo '    }'
        echo '}'
    fi
}

# section_fields <mode> <index> <order>: the fields of one `StaticSection`.
section_fields() {
    local mode=$1 index=$2 order=$3
    echo "        name: ::core::option::Option::Some(\"bench:section_$index\"),"
    echo "        order: $order,"
    echo '        tool: ::core::option::Option::None,'
    echo "        text: ::dsh_system_prompt::__private::StaticText::Fixed(SECTION_$index),"
    owner_fields "$mode" "SECTION_$index" "$((10#$index * 8 + 12))"
}

# owner_fields <mode> <item> <line>: the `owner` field of a static
# contribution. By hand (inventory) with the builtins; as the macros write
# it (expanded), crate, file and line are literals they computed.
owner_fields() {
    echo '        owner: ::dsh_system_prompt::__private::StaticOwner {'
    if [[ $1 == expanded ]]; then
        echo '            krate: "bench-expanded",'
        echo '            module: ::core::module_path!(),'
        echo "            item: \"$2\","
        echo '            file: "bench-expanded/src/lib.rs",'
        echo "            line: $3,"
    else
        echo '            krate: ::core::env!("CARGO_PKG_NAME"),'
        echo '            module: ::core::module_path!(),'
        echo "            item: \"$2\","
        echo '            file: ::core::file!(),'
        echo '            line: ::core::line!(),'
    fi
    echo '        },'
}

# unique_macro_lines <mangled kind and name>: the hidden macro that makes
# a duplicate name in one crate a build error.
unique_macro_lines() {
    echo '    #[doc(hidden)]'
    echo '    #[macro_export]'
    echo '    #[allow(non_local_definitions)]'
    echo "    macro_rules! __dsh_prompt_$1 { () => {} }"
}

# unique_lines <mangled kind and name>: the same in a `const _` block (a
# variable's).
unique_lines() {
    echo 'const _: () = {'
    unique_macro_lines "$1"
    echo '};'
}

# variable_lines: what `#[prompt_variable]` adds beside `bench_value`.
variable_lines() {
    cat <<'RUST'
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code, missing_docs, missing_debug_implementations, unreachable_pub)]
pub struct bench_value {}
const _: () = {
    impl ::dsh_system_prompt::__private::PromptVariable for bench_value {}
};
RUST
    unique_lines variable_bench__value
    cat <<'RUST'
const _: () = {
    fn __dsh_provide(
        cx: &::dsh_system_prompt::__private::AssembleContext,
    ) -> ::core::option::Option<::std::string::String> {
        ::dsh_system_prompt::__private::IntoVariableValue::into_variable_value(bench_value(cx))
    }
    ::dsh_system_prompt::__private::inventory::submit! {
        ::dsh_system_prompt::__private::StaticVariable {
            name: "bench_value",
            provider: __dsh_provide,
RUST
    owner_fields expanded bench_value 4
    echo '        }'
    echo '    }'
    echo '};'
}

# generate <crate> <mode: plain|macros|inventory|expanded|identity>
generate() {
    local crate=$1 mode=$2 i index reference
    mkdir -p "$dir/$crate/src"
    printf '[package]\nname = "%s"\nversion = "0.1.0"\nedition = "2024"\npublish = false\n\n[dependencies]\ndsh-system-prompt = { path = "%s/core" }\n' \
        "$crate" "$root" >"$dir/$crate/Cargo.toml"
    if [[ $mode == identity ]]; then
        echo 'bench-identity-attr = { path = "../bench-identity-attr" }' >>"$dir/$crate/Cargo.toml"
    fi
    {
        echo '//! Generated by benches/build-bench/run.sh.'
        if [[ $mode == macros ]]; then
            echo 'use dsh_system_prompt::{AssembleContext, prompt_section, prompt_variable};'
            echo
            echo '#[prompt_variable]'
        else
            echo 'use dsh_system_prompt::AssembleContext;'
            echo
        fi
        echo 'pub fn bench_value(_cx: &AssembleContext) -> Option<String> {'
        echo '    Some("the benchmark".to_owned())'
        echo '}'
        [[ $mode == expanded ]] && variable_lines
        for ((i = 0; i < sections; i++)); do
            reference=''
            ((i % 2 == 0)) && reference=' It runs on <<bench_value>>.'
            printf -v index '%04d' "$i"
            section_lines "$mode" "$index" $(((i * 7) % 300)) "$reference"
        done
    } >"$dir/$crate/src/lib.rs"
}

printf '[workspace]\nresolver = "3"\nmembers = ["bench-plain", "bench-macros", "bench-inventory", "bench-expanded", "bench-identity", "bench-identity-attr"]\n' >"$dir/Cargo.toml"
if [[ ${OPTIMIZE_MACROS:-0} == 1 ]]; then
    printf '\n[profile.dev.build-override]\nopt-level = 3\n' >>"$dir/Cargo.toml"
fi
generate bench-plain plain
generate bench-macros macros
generate bench-inventory inventory
generate bench-expanded expanded
generate bench-identity identity
# The identity attribute: the item back, unchanged.
mkdir -p "$dir/bench-identity-attr/src"
printf '[package]\nname = "bench-identity-attr"\nversion = "0.1.0"\nedition = "2024"\npublish = false\n\n[lib]\nproc-macro = true\n' \
    >"$dir/bench-identity-attr/Cargo.toml"
cat >"$dir/bench-identity-attr/src/lib.rs" <<'RUST'
//! Generated by benches/build-bench/run.sh: an attribute that does nothing.
use proc_macro::TokenStream;

#[proc_macro_attribute]
pub fn identity(_args: TokenStream, item: TokenStream) -> TokenStream {
    item
}
RUST

export CARGO_TARGET_DIR="$dir/target"
cd "$dir"
echo "scratch workspace: $dir" >&2
echo "building dependencies once..." >&2
cargo build --quiet --workspace
cargo check --quiet --workspace

now() { date +%s.%N; }

# median <numbers...>
median() {
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# With MEASURE=instructions, rustc runs under cachegrind for the bench
# crates (through a RUSTC_WRAPPER), and the figure is the instructions it
# executed, in millions: unlike wall time, the same on every run.
unit=s
if [[ ${MEASURE:-time} == instructions ]]; then
    command -v valgrind >/dev/null || {
        echo "MEASURE=instructions needs valgrind (apt-get install valgrind)" >&2
        exit 1
    }
    unit=M
    cat >"$dir/cachegrind-rustc.sh" <<'SH'
#!/usr/bin/env bash
# RUSTC_WRAPPER: run rustc under cachegrind when it compiles a bench crate.
rustc=$1
shift
for arg in "$@"; do
    if [[ $arg == bench_* ]]; then
        valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
            --log-file="$CACHEGRIND_LOG" "$rustc" "$@"
        exit
    fi
done
exec "$rustc" "$@"
SH
    chmod +x "$dir/cachegrind-rustc.sh"
fi

# measure <crate> <cargo subcommand>: the median over $runs runs of one
# rebuild of <crate> alone, in $unit.
measure() {
    local crate=$1 command=$2 figures=() start run log figure
    for ((run = 0; run < runs; run++)); do
        touch "$dir/$crate/src/lib.rs"
        if [[ $unit == M ]]; then
            log="$dir/cachegrind.log"
            : >"$log"
            CACHEGRIND_LOG=$log RUSTC_WRAPPER="$dir/cachegrind-rustc.sh" cargo "$command" --quiet -p "$crate"
            figure=$(awk '/I *refs:/ { gsub(",", "", $NF); printf "%.0f", $NF / 1e6 }' "$log")
            if [[ -z $figure ]]; then
                echo "no instruction count for $crate (was it rebuilt?); cachegrind said:" >&2
                cat "$log" >&2
                exit 1
            fi
            figures+=("$figure")
        else
            start=$(now)
            cargo "$command" --quiet -p "$crate"
            figures+=("$(awk -v a="$start" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }')")
        fi
    done
    echo "$crate cargo $command: ${figures[*]} $unit" >&2
    median "${figures[@]}"
}

read -ra crates <<<"${CRATES:-bench-plain bench-macros bench-inventory bench-expanded bench-identity}"
read -ra commands <<<"${COMMANDS:-build check}"
declare -A label=(
    [bench-plain]='bench-plain (plain consts)'
    [bench-macros]='bench-macros (#[prompt_section])'
    [bench-inventory]='bench-inventory (hand-written inventory::submit!)'
    [bench-expanded]="bench-expanded (the macros' output, hand-written)"
    [bench-identity]='bench-identity (an attribute that returns the item)'
)
declare -A build check
for command in "${commands[@]}"; do
    for crate in "${crates[@]}"; do
        if [[ $command == build ]]; then
            build[$crate]=$(measure "$crate" build)
        else
            check[$crate]=$(measure "$crate" check)
        fi
    done
done

# cell <figure> <baseline>: "<figure> <unit> | <ratio>x", or dashes for a
# figure not measured (CRATES, COMMANDS).
cell() {
    if [[ -z $1 ]]; then
        echo '— | —'
    elif [[ -z $2 ]]; then
        echo "$1 $unit | —"
    else
        awk -v a="$1" -v b="$2" -v unit="$unit" 'BEGIN { printf "%s %s | %.2fx", a, unit, a / b }'
    fi
}

echo
echo "$sections sections, median of $runs, measure: ${MEASURE:-time} ($unit), proc macros optimized: ${OPTIMIZE_MACROS:-0}"
echo
echo "| crate | cargo build | vs plain | cargo check | vs plain |"
echo "|---|---|---|---|---|"
for crate in "${crates[@]}"; do
    echo "| ${label[$crate]} | $(cell "${build[$crate]:-}" "${build[bench-plain]:-}") | $(cell "${check[$crate]:-}" "${check[bench-plain]:-}") |"
done
