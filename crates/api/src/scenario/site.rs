//! Where a check is looking, so that every error names the file, document, object and field.

use super::{LoadError, ObjectKey, Source};

/// The document being checked and, once known, the object in it.
#[derive(Debug, Clone)]
pub(super) struct Site {
    source: Source,
    object: Option<String>,
}

impl Site {
    /// A site in `source` whose object is not known yet.
    pub(super) fn document(source: Source) -> Self {
        Site {
            source,
            object: None,
        }
    }

    /// The same document, now naming its object.
    pub(super) fn with_object(&self, object: impl Into<String>) -> Self {
        Site {
            source: self.source.clone(),
            object: Some(object.into()),
        }
    }

    /// The site of an object already loaded.
    pub(super) fn object(source: Source, key: &ObjectKey) -> Self {
        Site {
            source,
            object: Some(key.to_string()),
        }
    }

    /// Where the document is.
    pub(super) fn source(&self) -> &Source {
        &self.source
    }

    /// An error about the document or object as a whole.
    pub(super) fn error(&self, message: impl Into<String>) -> LoadError {
        LoadError {
            source: Some(self.source.clone()),
            path: None,
            object: self.object.clone(),
            field: None,
            message: message.into(),
        }
    }

    /// An error about one field (`spec.minMember`).
    pub(super) fn field_error(
        &self,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> LoadError {
        LoadError {
            field: Some(field.into()),
            ..self.error(message)
        }
    }
}
