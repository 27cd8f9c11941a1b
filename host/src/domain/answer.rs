//! What a model's answer may ask of its task beyond its text: artifacts
//! (whole or in chunks) and how the turn answers the sender. Providers never
//! set these; an `llm.invoked` executor (an `in` body answering instead of
//! the model, or a `post` rewriting the response) does, through the
//! response's JSON, so a plugin built against any contract version can.
//!
//! Artifacts are A2A 1.0 `Artifact`s as on the wire (`artifactId`, `parts`
//! of `text`, `raw`, `url` or `data`, with `filename` and `mediaType`), so a
//! plugin writes what a client will read.

use serde::{Deserialize, Serialize};

use crate::a2a::types::Artifact;

/// The most artifact pieces one answer may carry.
pub const MAX_ARTIFACT_PIECES: usize = 64;

/// One artifact, or one chunk of it, as an answer carries it. Each piece
/// becomes one `TaskArtifactUpdateEvent` (with `append` and `lastChunk` as
/// given) and the task keeps the artifact with every chunk's parts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ArtifactPiece {
    pub artifact: Artifact,
    /// Add these parts to the artifact with the same id, an earlier piece
    /// of the same answer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub append: bool,
    /// This is the artifact's last chunk.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub last_chunk: bool,
}

/// How a turn's answer reaches its task and its sender, when it is not the
/// task's lifecycle as usual.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Disposition {
    /// The agent declines the task: it ends `TASK_STATE_REJECTED`, the
    /// answer's text its status message.
    Reject,
    /// A blocking `SendMessage` answers with the agent's message itself
    /// instead of the Task (A2A's message-only reply); the task goes on by
    /// its lifecycle.
    Message,
}

/// Why an answer's artifacts cannot be kept: the first problem found.
pub fn check_pieces(pieces: &[ArtifactPiece], max_bytes: usize) -> Result<(), String> {
    if pieces.len() > MAX_ARTIFACT_PIECES {
        return Err(format!(
            "the answer carries {} artifact pieces, more than the {MAX_ARTIFACT_PIECES} one \
             answer may carry",
            pieces.len()
        ));
    }
    let mut bytes = 0usize;
    for (index, piece) in pieces.iter().enumerate() {
        let artifact = &piece.artifact;
        if artifact.artifact_id.trim().is_empty() {
            return Err(format!("artifact piece {index} has no `artifactId`"));
        }
        if artifact.parts.is_empty() {
            return Err(format!(
                "artifact `{}` (piece {index}) has no parts",
                artifact.artifact_id
            ));
        }
        let earlier = &pieces[..index];
        let seen = earlier
            .iter()
            .any(|other| other.artifact.artifact_id == artifact.artifact_id);
        if piece.append && !seen {
            return Err(format!(
                "artifact piece {index} appends to `{}`, which no earlier piece of this answer \
                 starts",
                artifact.artifact_id
            ));
        }
        if !piece.append && seen {
            return Err(format!(
                "artifact `{}` is started twice; a later chunk needs `append: true`",
                artifact.artifact_id
            ));
        }
        let closed = earlier
            .iter()
            .any(|other| other.artifact.artifact_id == artifact.artifact_id && other.last_chunk);
        if closed {
            return Err(format!(
                "artifact `{}` takes a chunk after its last one",
                artifact.artifact_id
            ));
        }
        bytes = bytes.saturating_add(serde_json::to_vec(artifact).map_or(usize::MAX, |v| v.len()));
    }
    if bytes > max_bytes {
        return Err(format!(
            "the answer's artifacts take {bytes} bytes, more than the {max_bytes} of `[limits] \
             max_reply_bytes`"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pieces(value: serde_json::Value) -> Vec<ArtifactPiece> {
        serde_json::from_value(value).expect("pieces")
    }

    #[test]
    fn pieces_read_a2a_parts_and_chunk_flags() {
        let read = pieces(json!([
            { "artifact": { "artifactId": "a", "parts": [
                { "url": "https://example.com/o.txt", "filename": "o.txt", "mediaType": "text/plain" },
                { "raw": "aGk=" }, { "data": { "k": 1 } } ] } },
            { "artifact": { "artifactId": "a", "parts": [ { "text": "more" } ] },
              "append": true, "last_chunk": true }
        ]));
        assert_eq!(read[0].artifact.parts.len(), 3);
        assert_eq!(read[0].artifact.parts[0].filename.as_deref(), Some("o.txt"));
        assert!(read[1].append && read[1].last_chunk);
        assert_eq!(check_pieces(&read, 1 << 20), Ok(()));
    }

    #[test]
    fn chunks_must_follow_their_start_and_stop_at_the_last() {
        let text = |id: &str, append: bool, last: bool| {
            json!({ "artifact": { "artifactId": id, "parts": [ { "text": "x" } ] },
                    "append": append, "last_chunk": last })
        };
        let orphan = pieces(json!([text("a", true, false)]));
        assert!(
            check_pieces(&orphan, 1 << 20)
                .unwrap_err()
                .contains("no earlier piece")
        );
        let twice = pieces(json!([text("a", false, false), text("a", false, false)]));
        assert!(
            check_pieces(&twice, 1 << 20)
                .unwrap_err()
                .contains("started twice")
        );
        let after_last = pieces(json!([text("a", false, true), text("a", true, false)]));
        assert!(
            check_pieces(&after_last, 1 << 20)
                .unwrap_err()
                .contains("after its last")
        );
        let empty = pieces(json!([{ "artifact": { "artifactId": "a", "parts": [] } }]));
        assert!(
            check_pieces(&empty, 1 << 20)
                .unwrap_err()
                .contains("no parts")
        );
        let nameless = pieces(json!([{ "artifact": { "parts": [ { "text": "x" } ] } }]));
        assert!(
            check_pieces(&nameless, 1 << 20)
                .unwrap_err()
                .contains("artifactId")
        );
        let big = pieces(json!([text("a", false, false)]));
        assert!(
            check_pieces(&big, 10)
                .unwrap_err()
                .contains("max_reply_bytes")
        );
        let many: Vec<_> = (0..=MAX_ARTIFACT_PIECES)
            .map(|i| text(&i.to_string(), false, false))
            .collect();
        assert!(check_pieces(&pieces(json!(many)), usize::MAX).is_err());
    }
}
