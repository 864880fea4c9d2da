//! `volcano crds`: the CustomResourceDefinitions of Volcano's kinds, for `kubectl apply`.

use clap::ValueEnum;

use crate::{Failure, output};

/// Flags of `volcano crds`.
#[derive(clap::Args, Debug)]
pub struct CrdsArgs {
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "yaml")]
    pub output: CrdFormat,
}

/// How the CRDs are printed.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum CrdFormat {
    /// Multi-document YAML, `---` between the CRDs.
    Yaml,
    /// One JSON `List` holding the CRDs.
    Json,
}

/// The first line of the YAML output, so that a reader of `deploy/10-crds.yaml` knows where
/// it comes from and how to regenerate it.
pub const YAML_HEADER: &str = "# The CustomResourceDefinitions of volcano-rs, as printed by `volcano crds`.\n\
     # Regenerate with: cargo run -p volcano-cli -- crds > deploy/10-crds.yaml\n";

/// The text `volcano crds` prints for a format (without the final newline `print` adds).
pub fn render(format: CrdFormat) -> Result<String, Failure> {
    let text = match format {
        CrdFormat::Yaml => volcano_api::crds::crds_yaml().map(|y| format!("{YAML_HEADER}{y}")),
        CrdFormat::Json => volcano_api::crds::crds_json(),
    };
    let text = text.map_err(|e| Failure::Internal(e.into()))?;
    Ok(text.trim_end().to_string())
}

/// Prints the CRDs.
pub fn run(args: &CrdsArgs) -> Result<(), Failure> {
    output::print(&render(args.output)?)
}
