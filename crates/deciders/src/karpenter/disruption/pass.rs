//! One disruption pass (core: disruption/controller.go `disrupt`): every
//! node judged as a Graceful candidate first, then each method of
//! [`METHODS`] in order on its own candidates and a fresh budget mapping
//! for its reason, until one makes a command.
//!
//! A consolidation method that found nothing at the cluster's current
//! consolidation state skips the pass (after its candidates are judged,
//! as upstream's `ComputeCommands` returns at once when `IsConsolidated`);
//! the pass hands back the methods that found nothing, for the caller to
//! mark.
//!
//! A method that may be computed speculatively
//! ([`DisruptionMethod::speculative`]) runs, with more than one thread,
//! beside the method before it; its outcome is used only if that one makes
//! no command. Methods only read the pass and hand back their notes, which
//! the pass takes in method order, so the outcome is the one of the methods
//! computed one after the other, whatever the thread count.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use super::context::{Note, PassContext};
use super::methods::{DisruptionMethod, METHODS, MethodOutcome, should_disrupt};
use super::reasons::Unconsolidatable;
use super::types::{Candidate, Command, Method, PassInput, PassOutcome};
use crate::scheduler::NodeId;

/// One pass of every method in order.
pub(crate) fn run_pass(input: &PassInput<'_>) -> PassOutcome {
    let mut ctx = PassContext::new(input);
    let mut notes = Notes::default();
    let mut consolidated = Vec::new();
    notes.take(ctx.judge_every_node());
    let ctx = &ctx;
    let side_by_side = rayon::current_num_threads() > 1;
    let mut methods = METHODS.iter().copied().peekable();
    let mut command = None;
    while command.is_none() {
        let Some(method) = methods.next() else {
            break;
        };
        command = match methods.next_if(|next| side_by_side && next.speculative()) {
            None => alone(ctx, method, &mut notes, &mut consolidated),
            Some(next) => side_by_side_pair(ctx, method, next, &mut notes, &mut consolidated),
        };
    }
    let mut notes = notes.0;
    if let Some(command) = &command {
        for node in &command.candidates {
            notes.remove(node);
        }
    }
    PassOutcome {
        command,
        unconsolidatable: notes.into_iter().collect(),
        consolidated,
    }
}

/// `method`'s command, taking its notes (and, if it found nothing, its
/// consolidation state key).
fn alone(
    ctx: &PassContext<'_, '_>,
    method: &dyn DisruptionMethod,
    notes: &mut Notes,
    consolidated: &mut Vec<Method>,
) -> Option<Command> {
    let (judged, mut found) = ctx.judge(method.class(), |node| method.considers(node));
    let candidates = should_disrupt(ctx, method, judged.iter(), &mut found);
    let outcome = compute(ctx, method, candidates, None);
    notes.take(found);
    take_outcome(method, outcome, notes, consolidated)
}

/// A computed outcome's command, taking its notes and, when it found
/// nothing though no budget held it back, its consolidation state key.
fn take_outcome(
    method: &dyn DisruptionMethod,
    outcome: Option<MethodOutcome>,
    notes: &mut Notes,
    consolidated: &mut Vec<Method>,
) -> Option<Command> {
    let outcome = outcome?;
    notes.take(outcome.notes);
    if outcome.command.is_none() && !outcome.constrained_by_budgets {
        consolidated.extend(method.consolidation_state_key());
    }
    outcome.command
}

/// `first` and `next` (speculative) computed side by side: `next`'s
/// outcome, and the notes on the way to its candidates, count only if
/// `first` makes no command, and it is told once `first` has one.
fn side_by_side_pair(
    ctx: &PassContext<'_, '_>,
    first: &dyn DisruptionMethod,
    next: &dyn DisruptionMethod,
    notes: &mut Notes,
    consolidated: &mut Vec<Method>,
) -> Option<Command> {
    let (first_judged, mut first_found) = ctx.judge(first.class(), |node| first.considers(node));
    let first_candidates = should_disrupt(ctx, first, first_judged.iter(), &mut first_found);
    let (next_judged, mut next_found) = ctx.judge(next.class(), |node| next.considers(node));
    let next_candidates = should_disrupt(ctx, next, next_judged.iter(), &mut next_found);
    let found = AtomicBool::new(false);
    let (first_outcome, next_outcome) = rayon::join(
        || {
            let outcome = compute(ctx, first, first_candidates, None);
            let has_command = outcome.as_ref().is_some_and(|o| o.command.is_some());
            found.store(has_command, Ordering::Relaxed);
            outcome
        },
        || compute(ctx, next, next_candidates, Some(&found)),
    );
    notes.take(first_found);
    if let Some(command) = take_outcome(first, first_outcome, notes, consolidated) {
        return Some(command);
    }
    notes.take(next_found);
    take_outcome(next, next_outcome, notes, consolidated)
}

/// `method`'s outcome on `candidates`; none without any (its budgets are
/// not even taken, as upstream's `disrupt` returns before
/// `ComputeCommands`), or when it found nothing at the current
/// consolidation state.
fn compute(
    ctx: &PassContext<'_, '_>,
    method: &dyn DisruptionMethod,
    candidates: Vec<&Candidate>,
    beside: Option<&AtomicBool>,
) -> Option<MethodOutcome> {
    let consolidated = method
        .consolidation_state_key()
        .is_some_and(|key| ctx.input.is_consolidated(key));
    if candidates.is_empty() || consolidated {
        return None;
    }
    let budgets = ctx.budgets(method.reason());
    Some(method.compute_command(ctx, candidates, budgets, beside))
}

/// The pass's notes: the first reason found per node.
#[derive(Default)]
struct Notes(BTreeMap<NodeId, Unconsolidatable>);

impl Notes {
    fn take(&mut self, notes: Vec<Note>) {
        for (node, reason) in notes {
            self.0.entry(node).or_insert(reason);
        }
    }
}
