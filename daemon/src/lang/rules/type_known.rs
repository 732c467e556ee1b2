//! `type_known`: TODO(helper) — being written.

use super::Cx;
use crate::lang::diagnostic::Diagnostic;

pub(super) fn check(_cx: &Cx<'_>, _out: &mut Vec<Diagnostic>) {}
