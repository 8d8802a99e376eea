//! Renders results for people and programs: terminal tables, CSV and JSON.
//! Writers take `&mut impl Write`; nothing here decides anything.

pub mod atomic;
pub mod chart;
pub mod cleanup;
pub mod compare;
pub mod explain;
pub mod html;
pub mod instance_types;
pub mod plan;
pub mod read;
pub mod run;
pub mod schema;
pub mod sweep;
pub mod table;

use karpsim_catalog::snapshot;
use karpsim_deciders::karpenter;
use karpsim_input::nodepools;
use karpsim_model::{cloud, kube, suggest};
use karpsim_sim as sim;
