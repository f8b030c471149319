//! `Contribution`: what a change event is about, and what removing an
//! entry from the state gives back. A leaf module, so that the state and
//! the publishing of its changes both name it without importing each other.

use std::fmt;

/// What a change event is about.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Contribution {
    /// A section.
    Section {
        /// Its name.
        name: String,
    },
    /// A runtime context.
    Context {
        /// Its name.
        name: String,
    },
    /// A variable.
    Variable {
        /// Its name.
        name: String,
    },
    /// A tool provider.
    Tools {
        /// Its name.
        name: String,
    },
    /// A waterfall listener.
    AssembleListener {
        /// Its name.
        name: String,
    },
    /// A layer's tool order.
    ToolOrder,
    /// A change listener.
    ChangeListener,
}

impl Contribution {
    /// What kind of contribution it is, as errors name it: `tool provider`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Section { .. } => "section",
            Self::Context { .. } => "context",
            Self::Variable { .. } => "variable",
            Self::Tools { .. } => "tool provider",
            Self::AssembleListener { .. } => "waterfall listener",
            Self::ToolOrder => "tool order",
            Self::ChangeListener => "change listener",
        }
    }
}

impl fmt::Display for Contribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Section { name } => write!(f, "section `{name}`"),
            Self::Context { name } => write!(f, "context `{name}`"),
            Self::Variable { name } => write!(f, "variable `{name}`"),
            Self::Tools { name } => write!(f, "tool provider `{name}`"),
            Self::AssembleListener { name } => write!(f, "waterfall listener `{name}`"),
            Self::ToolOrder => f.write_str("a tool order"),
            Self::ChangeListener => f.write_str("a change listener"),
        }
    }
}
