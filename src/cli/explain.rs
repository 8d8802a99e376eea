//! `karpsim explain DIR --nodeclaim NAME | --pod NAME | --list`: one
//! object's decision history from a report folder, like `kubectl
//! describe`, or the names of every object it can explain.

use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::Result;

use karpsim_report::explain::{ExplainError, Target, explain, list};
use karpsim_report::read::read_report;

#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("object").required(true).args(["nodeclaim", "pod", "list"])))]
pub struct ExplainArgs {
    /// Report directory (as written by `karpsim run --out DIR`).
    pub dir: PathBuf,
    /// A NodeClaim (Cluster Autoscaler: a node) by name.
    #[arg(long, value_name = "NAME")]
    pub nodeclaim: Option<String>,
    /// A pod, as NAMESPACE/NAME or NAME.
    #[arg(long, value_name = "NAME")]
    pub pod: Option<String>,
    /// List every NodeClaim (node) and pod of the report, per variant.
    #[arg(long)]
    pub list: bool,
    /// Only this variant [default: each variant in turn].
    #[arg(long, value_name = "NAME")]
    pub variant: Option<String>,
}

pub fn explain_command(args: &ExplainArgs) -> Result<()> {
    let variants = read_report(&args.dir)?;
    let text = match (&args.nodeclaim, &args.pod) {
        _ if args.list => list(&variants, args.variant.as_deref())?,
        (Some(name), _) => explain_or_hint(&variants, Target::NodeClaim(name.clone()), args)?,
        (None, Some(name)) => explain_or_hint(&variants, Target::Pod(name.clone()), args)?,
        (None, None) => anyhow::bail!("give --nodeclaim NAME, --pod NAME or --list"),
    };
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// The history, or for an unknown name the error with how to list the
/// names that exist.
fn explain_or_hint(
    variants: &[karpsim_report::read::VariantReport],
    target: Target,
    args: &ExplainArgs,
) -> Result<String> {
    match explain(variants, &target, args.variant.as_deref()) {
        Err(error @ ExplainError::Unknown { .. }) => anyhow::bail!(
            "{error}; list them all with `karpsim explain {} --list`",
            args.dir.display()
        ),
        other => Ok(other?),
    }
}
