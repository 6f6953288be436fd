//! A provider's contributions file over many consumers and their minted
//! secrets, as the pass benchmarks write them.

use std::path::Path;

use serde_json::json;

/// Writes `dir/c.json`, the contributions file of `provider` (its module
/// and machine) listing each of `consumers` (a name and its minted secret)
/// on machine `app-1` for `provision`, with its `secret_file` `s/NAME`; and
/// each secret in `dir/s/NAME`.
///
/// Panics when a file cannot be written.
pub fn write_contributions(
    dir: &Path,
    provider: (&str, &str),
    provision: &str,
    consumers: impl IntoIterator<Item = (String, String)>,
) {
    std::fs::create_dir_all(dir.join("s")).unwrap();
    let mut entries = Vec::new();
    for (name, secret) in consumers {
        std::fs::write(dir.join("s").join(&name), &secret).unwrap();
        entries.push(json!({"consumer": name, "machine": "app-1",
            "provision": provision, "secret_file": format!("s/{name}")}));
    }
    let (module, machine) = provider;
    let file = json!({"provider": {"module": module, "machine": machine}, "consumers": entries});
    std::fs::write(dir.join("c.json"), file.to_string()).unwrap();
}
