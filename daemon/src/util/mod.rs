//! Small rules every layer shares, each with one home: how a duration is
//! written ([`duration`]), how text is cut to a width ([`text`]) and how a
//! mutex is locked ([`lock`]). Depends on nothing else in the crate, so any
//! module may use it.

pub mod duration;
pub mod lock;
pub mod text;
