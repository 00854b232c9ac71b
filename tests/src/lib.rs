//! End-to-end tests for wink live in `tests/`.
