//! `Text`: a string that is free to clone.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// An immutable string that is cheap to clone: either `&'static str` (text
/// declared with the macros, no allocation and no reference count) or a
/// shared `Arc<str>` (text known at run time).
///
/// Names, section texts and owners are `Text`, so an assembly can be
/// snapshotted per step without copying prose.
#[derive(Clone)]
pub struct Text(Repr);

#[derive(Clone)]
enum Repr {
    Static(&'static str),
    Shared(Arc<str>),
}

impl Text {
    /// Text that lives for the whole program.
    pub const fn from_static(text: &'static str) -> Self {
        Self(Repr::Static(text))
    }

    /// The text as a `&str`.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Static(text) => text,
            Repr::Shared(text) => text,
        }
    }
}

impl Default for Text {
    fn default() -> Self {
        Self::from_static("")
    }
}

impl Deref for Text {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for Text {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl From<&'static str> for Text {
    fn from(text: &'static str) -> Self {
        Self::from_static(text)
    }
}

impl From<String> for Text {
    fn from(text: String) -> Self {
        Self(Repr::Shared(text.into()))
    }
}

impl From<&String> for Text {
    fn from(text: &String) -> Self {
        Self(Repr::Shared(text.as_str().into()))
    }
}

impl From<Arc<str>> for Text {
    fn from(text: Arc<str>) -> Self {
        Self(Repr::Shared(text))
    }
}

impl From<Box<str>> for Text {
    fn from(text: Box<str>) -> Self {
        Self(Repr::Shared(text.into()))
    }
}

impl PartialEq for Text {
    /// Equal texts are usually one text shared: the same bytes at the same
    /// address are equal without comparing them.
    fn eq(&self, other: &Self) -> bool {
        let (this, other) = (self.as_str(), other.as_str());
        std::ptr::eq(this, other) || this == other
    }
}

impl Eq for Text {}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialOrd for Text {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Text {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl std::hash::Hash for Text {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for Text {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}
