//! Blotting credentials out of text that leaves the process for a person
//! or a file (the debug log, the events a server streams): the values the
//! caller knows, and the shapes every credential of the usual kinds takes.

const REDACTED: &str = "[REDACTED]";

/// How well-known tokens begin. In text, the run of key characters after
/// one is blotted when it is long enough to be a key (not a word like
/// "sk-learn"); a variable whose value begins so is a secret.
pub const TOKEN_PREFIXES: [&str; 24] = [
    "sk-",
    "sk_live_",
    "sk_test_",
    "rk_live_",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "xoxp-",
    "xoxa-",
    "xoxs-",
    "xapp-",
    "AKIA",
    "ASIA",
    "AIza",
    "ya29.",
    "npm_",
    "pypi-",
    "hf_",
    "-----BEGIN",
];

/// Replaces the given secret values, the credentials in URLs
/// (`postgres://user:password@host`), JSON Web Tokens and anything shaped
/// like a known API key with `[REDACTED]`.
pub fn redact(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_string();
    for secret in secrets {
        out = out.replace(secret.as_str(), REDACTED);
    }
    for marker in TOKEN_PREFIXES.iter().chain(&["Bearer "]) {
        out = blot_after(&out, marker);
    }
    blot_jwts(&blot_url_credentials(&out))
}

/// `scheme://user:password@host` becomes `scheme://[REDACTED]@host`.
fn blot_url_credentials(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let after = &rest[at + 3..];
        let authority_len = after.find(['/', '?', '#', '"', '\'', ' ', '\n', ',', ';', '<', '>']).unwrap_or(after.len());
        out.push_str(&rest[..at + 3]);
        match after[..authority_len].rfind('@') {
            Some(user_end) if user_end > 0 => {
                out.push_str(REDACTED);
                out.push_str(&after[user_end..authority_len]);
            }
            _ => out.push_str(&after[..authority_len]),
        }
        rest = &after[authority_len..];
    }
    out.push_str(rest);
    out
}

/// A JSON Web Token (`eyJ…` in three base64url parts) becomes `[REDACTED]`.
fn blot_jwts(text: &str) -> String {
    let token_char = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.';
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("eyJ") {
        let after = &rest[at..];
        let len = after.find(|c: char| !token_char(c)).unwrap_or(after.len());
        out.push_str(&rest[..at]);
        let candidate = &after[..len];
        if is_jwt(candidate) {
            out.push_str(REDACTED);
        } else {
            out.push_str(candidate);
        }
        rest = &after[len..];
    }
    out.push_str(rest);
    out
}

/// A JSON Web Token: three base64url parts, the first a JSON object (`eyJ`
/// is how `{"` encodes).
pub fn is_jwt(value: &str) -> bool {
    let value = value.trim();
    let parts: Vec<&str> = value.split('.').collect();
    value.starts_with("eyJ")
        && parts.len() == 3
        && parts.iter().take(2).all(|p| p.len() > 4 && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'))
}

/// Blots the run of key characters after each `marker` (when it is long
/// enough to be a key rather than a word like "sk-learn").
fn blot_after(text: &str, marker: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(marker) {
        let after = &rest[at + marker.len()..];
        let key_len = after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')).unwrap_or(after.len());
        out.push_str(&rest[..at + marker.len()]);
        if key_len >= 16 {
            out.push_str(REDACTED);
        } else {
            out.push_str(&after[..key_len]);
        }
        rest = &after[key_len..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_known_secrets_are_blotted_but_words_are_not() {
        let text = "use sk-proj-abcdefghijklmnop1234 and Bearer abcdefghijklmnopqrstuv; pip install sk-learn; token hunter22hunter22";
        let out = redact(text, &["hunter22hunter22".to_string()]);
        assert_eq!(out, "use sk-[REDACTED] and Bearer [REDACTED]; pip install sk-learn; token [REDACTED]");
    }

    #[test]
    fn credentials_in_urls_tokens_and_jwts_are_blotted() {
        let text = "db postgres://app:hunter2@db:5432/app and https://example.com/a@b, ghp_0123456789abcdefghij, jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl done";
        let out = redact(text, &[]);
        assert_eq!(out, "db postgres://[REDACTED]@db:5432/app and https://example.com/a@b, ghp_[REDACTED], jwt [REDACTED] done");
    }
}
