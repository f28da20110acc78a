//! Real benchmark programs (under construction).
