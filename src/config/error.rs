//! Where a configuration fact came from (file and line) and the errors and warnings that name it.

use super::*;

/// Where a configuration item was written: file and 1-based line (0 when the file itself is the
/// subject, e.g. it cannot be read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub file: Arc<Path>,
    pub line: usize,
}

impl Origin {
    pub fn new(file: &Path, line: usize) -> Self {
        Origin {
            file: Arc::from(file),
            line,
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.file.display();
        if self.line == 0 {
            write!(f, "{name}")
        } else {
            write!(f, "{name}:{}", self.line)
        }
    }
}

/// One configuration error: `file:line: <element>: message`.
#[derive(Debug, Clone, thiserror::Error)]
pub struct ConfigError {
    pub origin: Origin,
    /// The element concerned, as written (e.g. `table name="travelrecord"`); may be empty.
    pub element: String,
    pub message: String,
}

impl ConfigError {
    pub fn new(origin: &Origin, element: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError {
            origin: origin.clone(),
            element: element.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.element.is_empty() {
            write!(f, "{}: {}", self.origin, self.message)
        } else {
            write!(f, "{}: <{}>: {}", self.origin, self.element, self.message)
        }
    }
}

/// All errors found while loading a configuration directory, in file order.
#[derive(Debug, Clone, thiserror::Error)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

/// Something manx accepted but that deserves the operator's attention (logged once at start-up).
#[derive(Debug, Clone)]
pub struct ConfigWarning {
    pub origin: Origin,
    pub message: String,
}

impl fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.origin, self.message)
    }
}
