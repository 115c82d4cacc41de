//! warren
