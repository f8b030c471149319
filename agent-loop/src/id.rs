//! The one shape of the loop's string ids (`AgentId`, `SessionId`).

/// Declares a string id: an `Arc<str>` inside, so clones are cheap;
/// serialized as the bare string; shown as the string (`Display`) and as
/// a string literal (`Debug`); made from a `&str` or a `String`. What an id
/// has beyond that (`SessionId::generate`) goes in its own `impl`.
macro_rules! string_id {
    ($(#[$meta:meta])* $vis:vis struct $name:ident;) => {
        $(#[$meta])*
        #[derive(
            Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
        )]
        #[serde(transparent)]
        $vis struct $name(std::sync::Arc<str>);

        impl $name {
            /// The id `id`.
            pub fn new(id: impl Into<std::sync::Arc<str>>) -> Self {
                Self(id.into())
            }

            /// The id as a `&str`.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Debug::fmt(&*self.0, f)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<&str> for $name {
            fn from(id: &str) -> Self {
                Self::new(id)
            }
        }

        impl From<String> for $name {
            fn from(id: String) -> Self {
                Self::new(id)
            }
        }
    };
}

pub(crate) use string_id;
