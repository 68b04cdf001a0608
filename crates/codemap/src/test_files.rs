//! Which files of a workspace hold tests rather than the code under test,
//! told by the conventions of pytest, unittest and Cargo. Test code is
//! never a suspect and never a region to edit, but its frames say which
//! test reached the code.

/// Whether `path` holds tests rather than the code under test.
pub fn is_test_path(path: &str) -> bool {
    path.split('/').any(|part| {
        let stem = part.trim_end_matches(".py").trim_end_matches(".rs");
        part == "tests" || part == "test" || part == "testing" || stem.starts_with("test_") || stem.ends_with("_test") || stem == "conftest"
    })
}
