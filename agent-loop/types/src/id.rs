//! The ids of the loop's vocabulary, `AgentId` and `SessionId`, and the
//! one shape every string id has.

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

string_id! {
    /// The name of an agent (`coder`), as a deployment declares it.
    pub struct AgentId;
}

string_id! {
    /// The id of a session: unique across processes when generated.
    pub struct SessionId;
}

impl SessionId {
    /// A fresh id, a random (v4) UUID: no other process's session has it,
    /// so what an API keys by it (OpenAI's `prompt_cache_key`) is this
    /// session's alone, and a store can keep it.
    pub fn generate() -> Self {
        Self::new(uuid::Uuid::new_v4().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_the_bare_string_in_json_and_in_debug() -> Result<(), serde_json::Error> {
        let id = SessionId::new("s-1");
        assert_eq!(serde_json::to_string(&id)?, r#""s-1""#);
        assert_eq!(serde_json::from_str::<SessionId>(r#""s-1""#)?, id);
        assert_eq!(format!("{id:?} {id}"), r#""s-1" s-1"#);
        Ok(())
    }

    #[test]
    fn generated_ids_differ() {
        assert_ne!(SessionId::generate(), SessionId::generate());
    }
}
