//! Resource lists given on the command line: `cpu=1000m,memory=100Mi,nvidia.com/gpu=1`.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use volcano_api::resources::canonical_amount;
use volcano_api::scheduling::ResourceList;

/// Parses `name=quantity` pairs separated by commas; an empty text is an empty list. Errors
/// name the flag and the pair, so `--limits cpu=x` says which flag and which value is wrong.
pub fn parse_resource_list(flag: &str, text: &str) -> Result<ResourceList, String> {
    let mut list = ResourceList::new();
    if text.trim().is_empty() {
        return Ok(list);
    }
    for pair in text.split(',') {
        let pair = pair.trim();
        let Some((name, value)) = pair.split_once('=') else {
            return Err(format!(
                "{flag}: {pair:?} is not <resource>=<quantity> (e.g. cpu=1000m,memory=100Mi)"
            ));
        };
        let (name, value) = (name.trim(), value.trim());
        if name.is_empty() || value.contains('=') {
            return Err(format!(
                "{flag}: {pair:?} is not <resource>=<quantity> (e.g. cpu=1000m,memory=100Mi)"
            ));
        }
        canonical_amount(name, value).map_err(|e| format!("{flag}: {name}: {e}"))?;
        if list
            .insert(name.to_string(), Quantity(value.to_string()))
            .is_some()
        {
            return Err(format!("{flag}: {name} is given twice"));
        }
    }
    Ok(list)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_become_a_resource_list() {
        let list =
            parse_resource_list("--requests", "cpu=1000m, memory=100Mi,nvidia.com/gpu=1").unwrap();
        let got: Vec<(&str, &str)> = list
            .iter()
            .map(|(k, v)| (k.as_str(), v.0.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("cpu", "1000m"),
                ("memory", "100Mi"),
                ("nvidia.com/gpu", "1")
            ]
        );
        assert!(parse_resource_list("--requests", "").unwrap().is_empty());
    }

    #[test]
    fn errors_name_the_flag_and_the_pair() {
        let cases = [
            ("cpu", "--requests: \"cpu\" is not <resource>=<quantity>"),
            ("cpu=1,", "--requests: \"\" is not <resource>=<quantity>"),
            ("=1", "--requests: \"=1\" is not"),
            ("cpu=1=2", "--requests: \"cpu=1=2\" is not"),
            ("cpu=abc", "--requests: cpu: invalid quantity \"abc\""),
            (
                "memory=-1Gi",
                "--requests: memory: quantity \"-1Gi\" is negative",
            ),
            ("cpu=1,cpu=2", "--requests: cpu is given twice"),
        ];
        for (text, want) in cases {
            let err = parse_resource_list("--requests", text).unwrap_err();
            assert!(err.starts_with(want), "{text:?}: {err}");
        }
    }
}
