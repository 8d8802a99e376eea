//! `karpsim explain DIR --nodeclaim NAME | --pod NAME`: one object's
//! decision history from a report folder, like `kubectl describe`.

use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::Result;

use karpsim::report::explain::{Target, explain};
use karpsim::report::read::read_report;

#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("object").required(true).args(["nodeclaim", "pod"])))]
pub struct ExplainArgs {
    /// Report directory (as written by `karpsim run --out DIR`).
    pub dir: PathBuf,
    /// A NodeClaim (Cluster Autoscaler: a node) by name.
    #[arg(long, value_name = "NAME")]
    pub nodeclaim: Option<String>,
    /// A pod, as NAMESPACE/NAME or NAME.
    #[arg(long, value_name = "NAME")]
    pub pod: Option<String>,
    /// Only this variant [default: each variant in turn].
    #[arg(long, value_name = "NAME")]
    pub variant: Option<String>,
}

pub fn explain_command(args: &ExplainArgs) -> Result<()> {
    let target = match (&args.nodeclaim, &args.pod) {
        (Some(name), _) => Target::NodeClaim(name.clone()),
        (None, Some(name)) => Target::Pod(name.clone()),
        (None, None) => anyhow::bail!("give --nodeclaim NAME or --pod NAME"),
    };
    let variants = read_report(&args.dir)?;
    let text = explain(&variants, &target, args.variant.as_deref())?;
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}
