//! The user's syntax, as diagnostics quote it.

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};
use quote::ToTokens;

/// The user's syntax, as a diagnostic quotes it: `&'static str`, not the
/// token stream's `& 'static str`. Stable Rust gives no source text of a
/// multi-token span, so the text is rebuilt from the tokens, spaced the way
/// rustfmt would space the types and expressions attributes hold.
pub(crate) fn source(tokens: &impl ToTokens) -> String {
    let mut out = String::new();
    write_tokens(tokens.to_token_stream(), &mut out);
    out
}

/// What was written last, to decide whether a space goes before the next
/// token.
#[derive(Clone, Copy)]
enum Previous {
    Start,
    /// An ident or a literal.
    Word,
    Group,
    /// `spaced`: a space follows it (`,`, `cx:`, `=`, the `>` of `->`).
    Punct {
        ch: char,
        joint: bool,
        spaced: bool,
    },
}

fn write_tokens(tokens: TokenStream, out: &mut String) {
    let mut previous = Previous::Start;
    for token in tokens {
        let space = match (previous, &token) {
            (Previous::Start, _) => false,
            (Previous::Punct { spaced, .. }, _) => spaced,
            (_, TokenTree::Ident(_) | TokenTree::Literal(_)) => true,
            (_, TokenTree::Group(group)) => group.delimiter() == Delimiter::Brace,
            (_, TokenTree::Punct(punct)) => {
                matches!(
                    punct.as_char(),
                    '\'' | '=' | '-' | '+' | '*' | '&' | '|' | '#'
                )
            }
        };
        if space {
            out.push(' ');
        }
        previous = match token {
            TokenTree::Ident(ident) => {
                out.push_str(&ident.to_string());
                Previous::Word
            }
            TokenTree::Literal(literal) => {
                out.push_str(&literal.to_string());
                Previous::Word
            }
            TokenTree::Group(group) => {
                let stream = group.stream();
                let (open, close) = match group.delimiter() {
                    Delimiter::Parenthesis => ("(", ")"),
                    Delimiter::Bracket => ("[", "]"),
                    Delimiter::Brace if stream.is_empty() => ("{", "}"),
                    Delimiter::Brace => ("{ ", " }"),
                    Delimiter::None => ("", ""),
                };
                out.push_str(open);
                write_tokens(stream, out);
                out.push_str(close);
                Previous::Group
            }
            TokenTree::Punct(punct) => {
                let ch = punct.as_char();
                let joint = punct.spacing() == Spacing::Joint;
                let joined_to = match previous {
                    Previous::Punct {
                        ch, joint: true, ..
                    } => Some(ch),
                    _ => None,
                };
                let binary = matches!(previous, Previous::Word | Previous::Group);
                out.push(ch);
                let spaced = match ch {
                    ',' | ';' | '+' => true,
                    ':' => !joint && joined_to != Some(':'),
                    '=' => !joint,
                    '>' => matches!(joined_to, Some('-' | '=')),
                    '-' => !joint && binary,
                    _ => false,
                };
                Previous::Punct { ch, joint, spaced }
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::source;

    fn rendered(text: &str) -> String {
        let tokens: proc_macro2::TokenStream = text.parse().unwrap();
        source(&tokens)
    }

    #[test]
    fn source_reads_like_code() {
        assert_eq!(rendered("& 'static str"), "&'static str");
        assert_eq!(rendered("&mut AssembleContext"), "&mut AssembleContext");
        assert_eq!(rendered("Option < & str >"), "Option<&str>");
        assert_eq!(rendered("std :: string :: String"), "std::string::String");
        assert_eq!(rendered("Result<String, ()>"), "Result<String, ()>");
        assert_eq!(rendered("-2147483649"), "-2147483649");
        assert_eq!(rendered("\"5\""), "\"5\"");
        assert_eq!(rendered("extern \"C\""), "extern \"C\"");
        assert_eq!(rendered("fn(u8) -> u8"), "fn(u8) -> u8");
        assert_eq!(rendered("a::b"), "a::b");
        assert_eq!(rendered("cx: &AssembleContext"), "cx: &AssembleContext");
        assert_eq!(rendered("&self"), "&self");
        assert_eq!(rendered("BAND + 5"), "BAND + 5");
        assert_eq!(rendered("order = -5"), "order = -5");
        assert_eq!(rendered("a::b::<T>()"), "a::b::<T>()");
        assert_eq!(rendered("S {}"), "S {}");
    }
}
