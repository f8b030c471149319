//! Spending the budget on the files read, markers included: the files
//! nearest the working directory whole, then at most one file cut with
//! its marker, then one marker for every file that gets nothing — and all
//! of it, markers too, within `max_bytes`.
//!
//! The nearest files are kept whole while they fit. The first that does
//! not is cut to the whole lines that fit in what is left after its own
//! marker and the shared one; when not a line of it fits, it is left out
//! too, and when the shared marker does not fit beside the files kept,
//! the last of them is cut (or left out) in turn, until it does. The
//! shared marker names the first and last file it stands for, or, when
//! those paths do not fit, the first only, or only how many.

use std::path::Path;

use super::gather::Read;
use super::{InstructionFile, LeftOutFile, cut_marker};

/// How the budget was spent: the files in the prompt (whole, or one cut),
/// in the order they were read, and the files left out, in render order,
/// with the marker that says so.
#[derive(Debug)]
pub(super) struct Spent {
    /// Each file in the prompt, with its group.
    pub(super) files: Vec<(usize, InstructionFile)>,
    /// The files left out, in render order (farthest first).
    pub(super) left_out: Vec<LeftOutFile>,
    /// The marker that stands for them; `None` when none was left out.
    pub(super) marker: Option<String>,
}

/// Spends `max_bytes` on `reads` (in the order they were read, nearest
/// first: every one whole but perhaps the last), with `unread` left out
/// whatever happens.
pub(super) fn spend(
    reads: Vec<Read>,
    unread: Vec<(usize, LeftOutFile)>,
    max_bytes: usize,
) -> Spent {
    // `used[j]`: the bytes of the first `j` files, whole.
    let mut used = vec![0];
    for read in reads.iter().take_while(|read| read.is_whole()) {
        let total = used[used.len() - 1] + read.bytes;
        if total > max_bytes {
            break;
        }
        used.push(total);
    }
    let fitting = used.len() - 1;
    if fitting == reads.len() && unread.is_empty() {
        let files = reads.into_iter().map(whole).collect();
        return Spent {
            files,
            left_out: Vec::new(),
            marker: None,
        };
    }
    // The most files first; for each, the most detailed marker that fits.
    let plan = (0..=fitting)
        .rev()
        .find_map(|kept| plan(&reads, &unread, kept, max_bytes - used[kept], max_bytes))
        // The shortest marker fits any budget `InstructionsConfig::check`
        // accepts; should it not, it is still said.
        .unwrap_or_else(|| Plan {
            whole: 0,
            cut: None,
            marker: left_out_marker(&left_out_paths(&reads, &unread, 0), Detail::Count),
        });
    apply(reads, unread, plan)
}

/// Where the budget ends: the first `whole` files kept, the next one cut
/// to `cut` bytes (or left out), every later one left out.
struct Plan {
    whole: usize,
    cut: Option<usize>,
    marker: Option<String>,
}

/// The plan that keeps the first `whole` files in `room` bytes left after
/// them (of `max_bytes`): the next file cut, with both markers, when a
/// line of it fits (a character, for a first line longer than the whole
/// budget); else left out with the rest, when their marker fits — each
/// with the most detailed shared marker that fits.
fn plan(
    reads: &[Read],
    unread: &[(usize, LeftOutFile)],
    whole: usize,
    room: usize,
    max_bytes: usize,
) -> Option<Plan> {
    if let Some(next) = reads.get(whole) {
        let rest = left_out_paths(reads, unread, whole + 1);
        for detail in Detail::ALL {
            let marker = left_out_marker(&rest, detail);
            let marker_bytes = marker.as_ref().map_or(0, String::len);
            let cut = room
                .checked_sub(marker_bytes)
                .and_then(|room| room.checked_sub(cut_marker_bound(next)))
                .and_then(|room| cut_point(&next.text, room, max_bytes));
            if cut.is_some() {
                return Some(Plan { whole, cut, marker });
            }
        }
    }
    let rest = left_out_paths(reads, unread, whole);
    Detail::ALL
        .into_iter()
        .map(|detail| left_out_marker(&rest, detail))
        .find(|marker| marker.as_ref().map_or(0, String::len) <= room)
        .map(|marker| Plan {
            whole,
            cut: None,
            marker,
        })
}

/// The files and markers of `plan`.
fn apply(reads: Vec<Read>, unread: Vec<(usize, LeftOutFile)>, plan: Plan) -> Spent {
    let mut files = Vec::with_capacity(plan.whole + 1);
    let mut left_out = Vec::new();
    for (at, read) in reads.into_iter().enumerate() {
        if at < plan.whole {
            files.push(whole(read));
        } else if let (true, Some(kept)) = (at == plan.whole, plan.cut) {
            files.push(cut(read, kept));
        } else {
            left_out.push(read.left_out());
        }
    }
    left_out.extend(unread);
    Spent {
        files,
        left_out: render_order(left_out),
        marker: plan.marker,
    }
}

/// The paths of the files from the `from`-th read on, and the unread, in
/// render order: what the shared marker names.
fn left_out_paths<'a>(
    reads: &'a [Read],
    unread: &'a [(usize, LeftOutFile)],
    from: usize,
) -> Vec<&'a Path> {
    let files = reads
        .get(from..)
        .unwrap_or_default()
        .iter()
        .map(|read| (read.group, read.path.as_path()))
        .chain(
            unread
                .iter()
                .map(|(group, file)| (*group, file.path.as_path())),
        )
        .collect();
    render_order(files)
}

/// `items` (each with its group) in render order: by group, farthest
/// first, and in the order read within a group (a file before what it
/// imports).
pub(super) fn render_order<T>(mut items: Vec<(usize, T)>) -> Vec<T> {
    items.sort_by_key(|(group, _)| std::cmp::Reverse(*group));
    items.into_iter().map(|(_, item)| item).collect()
}

/// How much the shared marker says of where the files it stands for
/// are: paths can be long, and the marker is paid for from the budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Detail {
    /// The first and the last file.
    FirstAndLast,
    /// The first (the farthest from the working directory) only.
    First,
    /// How many, and where the list is.
    Count,
}

impl Detail {
    /// Every detail, most first.
    const ALL: [Self; 3] = [Self::FirstAndLast, Self::First, Self::Count];
}

/// The marker that stands for the files at `paths` (in render order), or
/// `None` for none, saying as much as `detail` of where they are.
pub(super) fn left_out_marker(paths: &[&Path], detail: Detail) -> Option<String> {
    let (first, last) = (paths.first()?.display(), paths[paths.len() - 1].display());
    let count = paths.len();
    let (them, have) = if count == 1 {
        ("it", "it has")
    } else {
        ("them", "they have")
    };
    let files = if count == 1 { "file" } else { "files" };
    let place = match (detail, count) {
        (Detail::Count, _) => {
            return Some(format!(
                "[dsh left out {count} instruction {files} to fit their budget; `dsh prompt \
                 --format explain` in the working directory lists {them}]"
            ));
        }
        (_, 1) => first.to_string(),
        (Detail::First, _) => format!(
            "{first} and {} more nearer the working directory",
            count - 1
        ),
        (_, 2) => format!("{first} and {last}"),
        _ => format!("from {first} to {last}"),
    };
    Some(format!(
        "[dsh left out {count} instruction {files} to fit their budget: {place}; use the read \
         tool on {them} for what {have} to say]"
    ))
}

/// The most bytes a cut of `read` adds to what it keeps: the line break
/// before its marker, and the marker with the largest numbers it can hold.
fn cut_marker_bound(read: &Read) -> usize {
    1 + cut_marker(
        &read.path,
        read.bytes,
        read.bytes,
        read.bytes.saturating_add(1),
    )
    .len()
}

/// Where to cut `text` to keep at most `room` bytes: at the last line
/// break that fits, since a half line reads as a whole instruction to a
/// model; at a character only when the first line is longer than the whole
/// budget, `max_bytes`, and so could never be kept whole. `None` when
/// nothing may be kept: the file is better left out than shown as a
/// fragment.
fn cut_point(text: &str, room: usize, max_bytes: usize) -> Option<usize> {
    let mut kept = room.min(text.len());
    while !text.is_char_boundary(kept) {
        kept -= 1;
    }
    if let Some(line_end) = text[..kept].rfind('\n') {
        return Some(line_end + 1);
    }
    let first_line = text.find('\n').map_or(text.len(), |end| end + 1);
    (kept > 0 && first_line > max_bytes).then_some(kept)
}

fn whole(read: Read) -> (usize, InstructionFile) {
    let file = InstructionFile {
        section: read.section,
        order: 0,
        source: read.source,
        bytes: read.bytes,
        kept: read.bytes,
        text: read.text,
        path: read.path,
        imported_by: read.imported_by,
    };
    (read.group, file)
}

/// `read` cut to its first `kept` bytes, and its marker.
fn cut(read: Read, kept: usize) -> (usize, InstructionFile) {
    let shown = &read.text[..kept];
    let next_line = shown.matches('\n').count() + 1;
    let mut text = String::with_capacity(kept + 200);
    text.push_str(shown);
    if !shown.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&cut_marker(&read.path, kept, read.bytes, next_line));
    let file = InstructionFile {
        section: read.section,
        order: 0,
        source: read.source,
        bytes: read.bytes,
        kept,
        text,
        path: read.path,
        imported_by: read.imported_by,
    };
    (read.group, file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_keeps_whole_lines_and_splits_only_a_line_longer_than_the_budget() {
        assert_eq!(cut_point("one\ntwo\nthree\n", 10, 256), Some(8));
        // A line that would fit a bigger room is not cut in two.
        assert_eq!(cut_point("one two\nthree\n", 5, 256), None);
        // A line longer than the budget is: `é` is two bytes, and three
        // bytes hold `é` and `t`.
        assert_eq!(cut_point("été long", 3, 4), Some(3));
        assert_eq!(cut_point("été", 1, 2), None);
    }

    #[test]
    fn the_short_marker_fits_the_smallest_budget_for_any_count() {
        let path = Path::new("/p/AGENTS.md");
        let paths = vec![path; 2];
        let mut marker = left_out_marker(&paths, Detail::Count).expect("a marker");
        marker = marker.replace('2', &usize::MAX.to_string());
        assert!(
            marker.len() <= super::super::MIN_MAX_BYTES,
            "{} bytes: {marker}",
            marker.len()
        );
        assert_eq!(left_out_marker(&[], Detail::FirstAndLast), None);
    }
}
