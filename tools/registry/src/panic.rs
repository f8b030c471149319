//! What a caught panic said.

use std::any::Any;

/// The message of a caught panic: the text `panic!` was given, or
/// `(no message)` when its payload is not a string.
///
/// Every layer that contains a panic — the tool registry, the agent loop,
/// the subagent tool and its runs, the `dsh` binary — words it with this
/// one function, so a panic reads the same wherever it is reported.
///
/// ```
/// let payload = std::panic::catch_unwind(|| panic!("boom {}", 1)).unwrap_err();
/// assert_eq!(dsh_tools::panic_message(payload.as_ref()), "boom 1");
/// let payload = std::panic::catch_unwind(|| std::panic::panic_any(7)).unwrap_err();
/// assert_eq!(dsh_tools::panic_message(payload.as_ref()), "(no message)");
/// ```
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(message) = payload.downcast_ref::<&str>() {
        (*message).to_owned()
    } else if let Some(message) = payload.downcast_ref::<String>() {
        message.clone()
    } else {
        "(no message)".to_owned()
    }
}
