//! `volcano sim alloc-vs-load`: the arrival-only GPU allocation experiment of the FGD paper,
//! for any scheduler configuration.

use std::path::PathBuf;

use volcano_scheduler::conf::SchedulerConf;
use volcano_sim::alloc_vs_load::{self, AllocVsLoad, Experiment};
use volcano_sim::openb;

use crate::{Failure, Format};

/// The policy the experiment runs when no `--conf` is given: GPUs as devices, scored by FGD.
const DEFAULT_CONF: &str = r#"
actions: "allocate"
tiers:
- plugins:
  - name: deviceshare
  - name: fgd
"#;

/// Flags of `volcano sim alloc-vs-load`.
#[derive(clap::Args, Debug)]
pub struct AllocVsLoadArgs {
    /// Node list CSV (`sn,cpu_milli,memory_mib,gpu,model`), e.g. openb_node_list_gpu_node.csv.
    #[arg(long)]
    pub nodes: PathBuf,
    /// Pod list CSV (`name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec]`).
    #[arg(long)]
    pub pods: PathBuf,
    /// Seeds: a range `42-51`, a list `1,2,3`, or both.
    #[arg(long, default_value = "42-51")]
    pub seeds: String,
    /// Scheduler configuration whose plugins are the policy (default: deviceshare + fgd).
    #[arg(long)]
    pub conf: Option<PathBuf>,
    /// Seeds run at once (default: the machine's cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "text")]
    pub output: Format,
}

/// Parses `42-51`, `1,5,9` or `1-3,7`.
fn parse_seeds(spec: &str) -> Result<Vec<u64>, String> {
    let mut seeds = Vec::new();
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = || format!("--seeds: {part:?} is not a seed or a range like 42-51");
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u64, u64) = (
                    a.trim().parse().map_err(|_| bad())?,
                    b.trim().parse().map_err(|_| bad())?,
                );
                if b < a || b - a > 10_000 {
                    return Err(bad());
                }
                seeds.extend(a..=b);
            }
            None => seeds.push(part.parse().map_err(|_| bad())?),
        }
    }
    if seeds.is_empty() {
        return Err("--seeds: no seed given".to_string());
    }
    seeds.dedup();
    Ok(seeds)
}

/// Runs the experiment and prints the curve.
pub fn run(args: &AllocVsLoadArgs) -> Result<(), Failure> {
    let seeds = parse_seeds(&args.seeds).map_err(Failure::Input)?;
    let conf = match &args.conf {
        Some(path) => crate::schedule::read_conf_file(path)?,
        None => SchedulerConf::parse(DEFAULT_CONF)
            .map(|(c, _)| c)
            .map_err(|e| Failure::Internal(e.into()))?,
    };
    let nodes = openb::read_nodes(&args.nodes).map_err(|e| Failure::Input(e.to_string()))?;
    let pods = openb::read_pods(&args.pods, &nodes).map_err(|e| Failure::Input(e.to_string()))?;
    let threads = args.threads.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    });
    let x = Experiment {
        nodes: &nodes,
        pods: &pods,
        conf: &conf,
    };
    let result =
        alloc_vs_load::run(&x, &seeds, threads).map_err(|e| Failure::Input(e.to_string()))?;
    match args.output {
        Format::Json => {
            let text = serde_json::to_string(&result).map_err(|e| Failure::Internal(e.into()))?;
            println!("{text}");
        }
        Format::Text => print_text(&result),
    }
    Ok(())
}

fn print_text(r: &AllocVsLoad) {
    println!(
        "GPU allocated (% of the cluster's GPUs) against GPU load arrived, mean of {} seed(s)",
        r.per_seed.len()
    );
    println!("{:>6}  {:>9}", "load %", "alloc %");
    for (load, mean) in r.loads.iter().zip(&r.mean) {
        if load % 10 == 0 || *load == 95 || *load == 105 || *load == 115 || *load == 125 {
            let v = mean.map_or("-".to_string(), |v| format!("{v:.2}"));
            println!("{load:>6}  {v:>9}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_seeds;

    #[test]
    fn seeds_are_ranges_and_lists() {
        assert_eq!(parse_seeds("42-44").unwrap(), vec![42, 43, 44]);
        assert_eq!(parse_seeds("1,5-6").unwrap(), vec![1, 5, 6]);
        assert!(parse_seeds("9-1").unwrap_err().contains("9-1"));
        assert!(parse_seeds("x").is_err());
        assert!(parse_seeds("").is_err());
    }
}
