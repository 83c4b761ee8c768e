//! The bytes of uploads not yet set (issue 26): the hub sends them ahead as chunks, one request
//! each, and the upload action that names them takes them out ([`take`]) to move them into the
//! page.
//!
//! A chunk is kept as the JavaScript string it arrived in (base64), outside the wasm's memory,
//! which would otherwise grow by every upload and never shrink. An upload belongs to the
//! viewer (the hub's session) that sent it: another session naming its ID gets nothing. What
//! is kept over all uploads is bounded ([`MAX_KEPT_BYTES`]), and an upload nobody took within
//! two minutes of its last chunk is dropped.

use std::cell::RefCell;
use std::collections::HashMap;

use tabwire_protocol::files::{
    CHUNK_BYTES, ChunkKept, MAX_KEPT_BYTES, MAX_UPLOAD_FILES, MAX_UPLOAD_ID_LEN, UploadChunk,
    UploadFile,
};
use tabwire_protocol::{ErrorCode, OpError};

/// How long an upload is kept after its last chunk.
const KEPT_FOR_MS: f64 = 120_000.0;

/// One file's chunks: where each starts, and its data.
pub type Parts<D> = Vec<(u64, D)>;

struct Upload<D> {
    viewer: String,
    /// Per file: its chunks in order, and the bytes they hold.
    files: Vec<(Parts<D>, u64)>,
    bytes: u64,
    touched: f64,
}

/// Uploads not yet set, by ID; `D` is a chunk's data (a JavaScript string in the extension).
pub struct Store<D> {
    uploads: HashMap<String, Upload<D>>,
}

impl<D> Default for Store<D> {
    fn default() -> Self {
        Store {
            uploads: HashMap::new(),
        }
    }
}

/// The bytes a padded base64 text of `len` characters ending in `padding` `=` holds.
fn decoded_len(len: usize, padding: usize) -> u64 {
    ((len / 4) * 3).saturating_sub(padding) as u64
}

impl<D> Store<D> {
    /// Keeps `chunk` for `viewer` at time `now` (its data turned into `D` by `data`).
    pub fn keep(
        &mut self,
        viewer: &str,
        chunk: UploadChunk,
        now: f64,
        data: impl FnOnce(String) -> D,
    ) -> Result<ChunkKept, OpError> {
        self.uploads
            .retain(|_, upload| now - upload.touched < KEPT_FOR_MS);
        let invalid = |message: String| OpError::new(ErrorCode::InvalidArgument, message);
        if chunk.upload.is_empty() || chunk.upload.len() > MAX_UPLOAD_ID_LEN {
            return Err(invalid("an upload's ID is 1 to 64 characters".into()));
        }
        let file = chunk.file as usize;
        if file >= MAX_UPLOAD_FILES {
            return Err(invalid(format!(
                "an upload has at most {MAX_UPLOAD_FILES} files"
            )));
        }
        let text = chunk.data.as_bytes();
        let padding = text.iter().rev().take_while(|&&b| b == b'=').count();
        if !text.len().is_multiple_of(4) || padding > 2 {
            return Err(invalid("a chunk's data is padded base64".into()));
        }
        let size = decoded_len(text.len(), padding);
        if size == 0 || size > CHUNK_BYTES as u64 {
            return Err(invalid(format!("a chunk holds 1 to {CHUNK_BYTES} bytes")));
        }
        let total: u64 = self.uploads.values().map(|upload| upload.bytes).sum();
        if total + size > MAX_KEPT_BYTES {
            return Err(OpError::new(
                ErrorCode::LimitExceeded,
                format!(
                    "the browser already holds {total} bytes of uploads not yet set, and takes \
                     at most {MAX_KEPT_BYTES}; wait for the other uploads to finish"
                ),
            ));
        }
        let upload = self.uploads.entry(chunk.upload).or_insert_with(|| Upload {
            viewer: viewer.to_owned(),
            files: Vec::new(),
            bytes: 0,
            touched: now,
        });
        if upload.viewer != viewer {
            return Err(OpError::new(
                ErrorCode::Forbidden,
                "that upload belongs to another session",
            ));
        }
        if upload.files.len() <= file {
            upload.files.resize_with(file + 1, || (Vec::new(), 0));
        }
        let (parts, kept) = &mut upload.files[file];
        if chunk.offset != *kept {
            return Err(invalid(format!(
                "chunks arrive in order: file {file} holds {kept} bytes, and this chunk starts at \
                 {}",
                chunk.offset
            )));
        }
        parts.push((chunk.offset, data(chunk.data)));
        *kept += size;
        upload.bytes += size;
        upload.touched = now;
        Ok(ChunkKept { kept: upload.bytes })
    }

    /// Takes upload `id` of `viewer` out, each file's chunks in order, when they hold exactly
    /// the bytes `files` declares. An upload of empty files has no chunks at all.
    pub fn take(
        &mut self,
        viewer: &str,
        id: &str,
        files: &[UploadFile],
    ) -> Result<Vec<Parts<D>>, OpError> {
        let mine = self
            .uploads
            .get(id)
            .is_none_or(|upload| upload.viewer == viewer);
        let upload = if mine { self.uploads.remove(id) } else { None };
        let mut kept = upload.map(|upload| upload.files).unwrap_or_default();
        if kept.len() > files.len() {
            return Err(missing());
        }
        kept.resize_with(files.len(), || (Vec::new(), 0));
        let mut out = Vec::with_capacity(files.len());
        for ((parts, bytes), file) in kept.into_iter().zip(files) {
            if bytes != file.size {
                return Err(missing());
            }
            out.push(parts);
        }
        Ok(out)
    }
}

impl<D> Store<D> {
    /// Forgets upload `id` of `viewer`, if it is still kept.
    pub fn discard(&mut self, viewer: &str, id: &str) {
        if self
            .uploads
            .get(id)
            .is_some_and(|upload| upload.viewer == viewer)
        {
            self.uploads.remove(id);
        }
    }
}

fn missing() -> OpError {
    OpError::new(
        ErrorCode::InvalidArgument,
        "the upload's bytes did not all reach the browser (or were dropped after two minutes); \
         nothing was set. Call upload_file again.",
    )
}

thread_local! {
    static STORE: RefCell<Store<wasm_bindgen::JsValue>> = RefCell::new(Store::default());
}

/// Keeps `chunk` for `viewer` (see [`Store::keep`]).
pub fn keep(viewer: &str, chunk: UploadChunk) -> Result<ChunkKept, OpError> {
    let now = crate::timer::now_ms();
    STORE.with(|store| {
        store.borrow_mut().keep(viewer, chunk, now, |data| {
            wasm_bindgen::JsValue::from_str(&data)
        })
    })
}

/// Forgets upload `id` of `viewer` (its request ended: refused, cancelled or done).
pub fn discard(viewer: &str, id: &str) {
    STORE.with(|store| store.borrow_mut().discard(viewer, id));
}

/// Takes upload `id` of `viewer` out (see [`Store::take`]).
pub fn take(
    viewer: &str,
    id: &str,
    files: &[UploadFile],
) -> Result<Vec<Parts<wasm_bindgen::JsValue>>, OpError> {
    STORE.with(|store| store.borrow_mut().take(viewer, id, files))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(upload: &str, file: u32, offset: u64, data: &str) -> UploadChunk {
        UploadChunk {
            upload: upload.into(),
            file,
            offset,
            data: data.into(),
        }
    }

    fn file(size: u64) -> UploadFile {
        UploadFile {
            name: "a.txt".into(),
            mime_type: String::new(),
            size,
        }
    }

    fn keep(
        store: &mut Store<String>,
        viewer: &str,
        c: UploadChunk,
        now: f64,
    ) -> Result<u64, OpError> {
        store.keep(viewer, c, now, |d| d).map(|k| k.kept)
    }

    #[test]
    fn chunks_are_kept_in_order_and_taken_whole_by_their_session() {
        let mut store = Store::default();
        // "hello" is aGVsbG8= (5 bytes), "hi" aGk= (2).
        assert_eq!(
            keep(&mut store, "s1", chunk("u", 0, 0, "aGVsbG8="), 0.0).unwrap(),
            5
        );
        assert_eq!(
            keep(&mut store, "s1", chunk("u", 0, 5, "aGk="), 1.0).unwrap(),
            7
        );
        assert_eq!(
            keep(&mut store, "s1", chunk("u", 1, 0, "aGk="), 2.0).unwrap(),
            9
        );
        // Another session can neither add to it nor take it.
        let other = keep(&mut store, "s2", chunk("u", 1, 2, "aGk="), 3.0).unwrap_err();
        assert_eq!(other.code, ErrorCode::Forbidden);
        assert!(store.take("s2", "u", &[file(7), file(2)]).is_err());
        let parts = store.take("s1", "u", &[file(7), file(2)]).unwrap();
        assert_eq!(
            parts[0],
            vec![(0, "aGVsbG8=".to_owned()), (5, "aGk=".to_owned())]
        );
        assert_eq!(parts[1], vec![(0, "aGk=".to_owned())]);
        // Taken once.
        assert!(store.take("s1", "u", &[file(7), file(2)]).is_err());
        // Empty files need no chunk.
        assert_eq!(store.take("s1", "none", &[file(0)]).unwrap().len(), 1);
        // An upload whose request ended without taking it is forgotten; only by its session.
        keep(&mut store, "s1", chunk("v", 0, 0, "aGk="), 4.0).unwrap();
        store.discard("s2", "v");
        store.discard("s1", "v");
        assert!(store.take("s1", "v", &[file(2)]).is_err());
    }

    #[test]
    fn bad_chunks_are_refused_and_keep_nothing() {
        let mut store = Store::default();
        for bad in [
            chunk("", 0, 0, "aGk="),
            chunk(&"u".repeat(65), 0, 0, "aGk="),
            chunk("u", 20, 0, "aGk="),
            chunk("u", 0, 0, "aGk"),
            chunk("u", 0, 0, ""),
            chunk("u", 0, 3, "aGk="),
        ] {
            assert!(keep(&mut store, "s", bad, 0.0).is_err());
        }
        let big = "A".repeat((CHUNK_BYTES / 3 + 1) * 4);
        assert!(keep(&mut store, "s", chunk("u", 0, 0, &big), 0.0).is_err());
        // A size mismatch at the end sets nothing.
        keep(&mut store, "s", chunk("u", 0, 0, "aGk="), 0.0).unwrap();
        assert!(store.take("s", "u", &[file(3)]).is_err());
    }

    #[test]
    fn the_total_is_bounded_and_old_uploads_lapse() {
        // Only the sizes matter here: the data is dropped at once.
        let mut store = Store::<()>::default();
        let mut keep = |upload: &str, file: u32, now: f64| {
            let full = "A".repeat(CHUNK_BYTES / 3 * 4);
            store.keep("s", chunk(upload, file, 0, &full), now, |_| ())
        };
        let per = decoded_len(CHUNK_BYTES / 3 * 4, 0);
        for i in 0..MAX_KEPT_BYTES / per {
            keep(&format!("u{}", i / 20), (i % 20) as u32, 0.0).unwrap();
        }
        let refused = keep("last", 0, 1.0).unwrap_err();
        assert_eq!(refused.code, ErrorCode::LimitExceeded);
        // Two minutes later the old ones are gone, and there is room again.
        keep("last", 0, KEPT_FOR_MS + 1.0).unwrap();
    }
}
