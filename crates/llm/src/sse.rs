//! Server-sent events arrive in network chunks that may end mid-line, or
//! mid-character: keep bytes until a line is whole.

/// Takes the complete lines off the front of `buffer`, trimmed; the
/// unfinished rest stays for the next chunk.
pub fn take_lines(buffer: &mut Vec<u8>) -> Vec<String> {
    let mut lines = Vec::new();
    while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
        let line: Vec<u8> = buffer.drain(..=end).collect();
        lines.push(String::from_utf8_lossy(&line).trim().to_string());
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_character_cut_between_chunks_survives() {
        let text = "data: é\n".as_bytes();
        let mut buffer = text[..7].to_vec();
        assert!(take_lines(&mut buffer).is_empty());
        buffer.extend_from_slice(&text[7..]);
        assert_eq!(take_lines(&mut buffer), vec!["data: é"]);
        assert!(buffer.is_empty());
    }
}
