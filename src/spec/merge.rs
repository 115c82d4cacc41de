//! A spec written in several files (a directory): the rules that merge them into one
//! spec, and the record of which file wrote what (docs/spec.md, "Specs in several
//! files").
//!
//! Why the rules are what they are: each file belongs to one team (CODEOWNERS), so a
//! value is written in exactly one file and the merge needs no order. Maps of named
//! entries merge by name; a named entry, a setting (`name`, `defaults`, a vhost's
//! `limits` …) or a list is a value of one file, and the same one in two files is an
//! error naming both places. `version` is in every file (each file validates on its
//! own against the JSON Schema, which requires it), and all must agree.

use indexmap::IndexMap;
use rustc_hash::FxHashMap as HashMap;

use super::diagnostic::Diagnostic;
use super::source_map::{SourceFile, SpecPath};
use super::types::{Spec, Vhost};

/// Where the rules are explained, for the help of a merge error.
const RULES: &str = "docs/spec.md, \"Specs in several files\"";

/// Merges the specs of `files` (same order, name order) into one. Returns the spec and
/// which file wrote each named entry and setting (by spec path), or every conflict.
pub(super) fn merge(
    files: &[SourceFile],
    specs: Vec<Spec>,
) -> Result<(Spec, HashMap<SpecPath, usize>), Vec<Diagnostic>> {
    let mut merger = Merger {
        files,
        writers: HashMap::default(),
        errors: Vec::new(),
    };
    merger.check_versions(&specs);
    let mut specs = specs.into_iter().enumerate();
    let (_, mut merged) = specs.next().expect("a spec directory has a file");
    merger.claim_top_level(0, &merged);
    let mut vhost_files: HashMap<String, usize> = HashMap::default();
    for name in merged.vhosts.keys() {
        vhost_files.insert(name.clone(), 0);
    }
    merger.claim_vhosts(0, &merged.vhosts);
    for (index, spec) in specs {
        merger.merge_into(index, &mut merged, spec, &mut vhost_files);
    }
    // A vhost is pointed at in the file that writes its settings, else the first file
    // that names it.
    for (name, index) in vhost_files {
        merger
            .writers
            .entry(SpecPath::root().key("vhosts").key(name))
            .or_insert(index);
    }
    if merger.errors.is_empty() {
        Ok((merged, merger.writers))
    } else {
        Err(merger.errors)
    }
}

/// The settings at the top of a spec, each written in one file at most.
const TOP_SETTINGS: &[&str] = &["lint", "name", "rabbitmq", "defaults", "policy_priority"];
/// The settings of a vhost, each written in one file at most (`tags` and `bindings`
/// are lists: a list is a value of one file).
const VHOST_SETTINGS: &[&str] = &[
    "lint",
    "description",
    "tags",
    "default_queue_type",
    "limits",
    "defaults",
    "bindings",
];

struct Merger<'a> {
    files: &'a [SourceFile],
    writers: HashMap<SpecPath, usize>,
    errors: Vec<Diagnostic>,
}

impl Merger<'_> {
    /// `file:line:column` of the key at `path` in file `index`.
    fn at(&self, index: usize, path: &SpecPath) -> String {
        let file = &self.files[index];
        match file.source_map.locate_key(path) {
            Some(at) => format!("{}:{}:{}", file.path.display(), at.line, at.column),
            None => file.path.display().to_string(),
        }
    }

    /// Records that file `index` wrote `path`; an error when an earlier file did.
    fn claim(&mut self, index: usize, path: SpecPath, what: impl FnOnce() -> String) -> bool {
        match self.writers.get(&path) {
            Some(&first) if first != index => {
                let mut diagnostic = Diagnostic::error(
                    "defined-twice",
                    format!(
                        "{} is defined in {} and in {}",
                        what(),
                        self.at(first, &path),
                        self.at(index, &path)
                    ),
                )
                .help(format!(
                    "write it in one file only: each named entry and setting of a spec directory belongs to one file ({RULES})"
                ));
                diagnostic.file = Some(self.files[index].path.clone());
                diagnostic.location = self.files[index].source_map.locate_key(&path);
                diagnostic.path = Some(path);
                self.errors.push(diagnostic);
                false
            }
            _ => {
                self.writers.insert(path, index);
                true
            }
        }
    }

    /// Whether file `index` writes the key at `path`.
    fn writes(&self, index: usize, path: &SpecPath) -> bool {
        self.files[index].source_map.has_key(path)
    }

    /// Every file writes `version` (the schema requires it): one error, naming each
    /// file's, when they disagree.
    fn check_versions(&mut self, specs: &[Spec]) {
        let path = SpecPath::root().key("version");
        let mut versions: Vec<u32> = specs.iter().map(|s| s.version).collect();
        versions.sort_unstable();
        versions.dedup();
        if versions.len() < 2 {
            return;
        }
        // Pointed at a file that differs from most (ties: from the first file).
        let count = |version: u32| specs.iter().filter(|s| s.version == version).count();
        let most = versions
            .iter()
            .copied()
            .max_by_key(|&v| (count(v), v == specs[0].version))
            .unwrap_or(specs[0].version);
        let differs = specs
            .iter()
            .position(|s| s.version != most)
            .unwrap_or_default();
        let each: Vec<String> = versions
            .iter()
            .map(|&version| {
                let files: Vec<String> = specs
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| s.version == version)
                    .map(|(index, _)| {
                        let file = &self.files[index];
                        match file.source_map.locate(&path) {
                            Some(at) => {
                                format!("{}:{}:{}", file.path.display(), at.line, at.column)
                            }
                            None => file.path.display().to_string(),
                        }
                    })
                    .collect();
                format!("{version} in {}", files.join(", "))
            })
            .collect();
        let mut diagnostic = Diagnostic::error(
            "version-mismatch",
            format!(
                "the files of the spec disagree on `version`: {}",
                each.join("; ")
            ),
        )
        .help("write the same `version` in every file of the directory (this warren reads `version: 1`)");
        diagnostic.file = Some(self.files[differs].path.clone());
        diagnostic.location = self.files[differs].source_map.locate(&path);
        diagnostic.path = Some(path);
        self.errors.push(diagnostic);
    }

    /// Claims the settings and named entries of the first file (nothing to merge into).
    fn claim_top_level(&mut self, index: usize, spec: &Spec) {
        let root = SpecPath::root();
        for key in TOP_SETTINGS {
            if self.writes(index, &root.key(*key)) {
                self.writers.insert(root.key(*key), index);
            }
        }
        for (map, names) in [
            ("ladders", spec.ladders.keys().collect::<Vec<_>>()),
            ("users", spec.users.keys().collect()),
            ("global_parameters", spec.global_parameters.keys().collect()),
            ("environments", spec.environments.keys().collect()),
        ] {
            for name in names {
                self.writers.insert(root.key(map).key(name.as_str()), index);
            }
        }
    }

    fn claim_vhosts(&mut self, index: usize, vhosts: &IndexMap<String, Vhost>) {
        for (name, vhost) in vhosts {
            let at = SpecPath::root().key("vhosts").key(name.as_str());
            for key in VHOST_SETTINGS {
                if self.writes(index, &at.key(*key)) {
                    self.writers.insert(at.key(*key), index);
                    self.writers.insert(at.clone(), index);
                }
            }
            for (map, names) in vhost_maps(vhost) {
                for entry in names {
                    self.writers.insert(at.key(map).key(entry), index);
                }
            }
            for (component, entries) in &vhost.parameters {
                for entry in entries.keys() {
                    let path = at
                        .key("parameters")
                        .key(component.as_str())
                        .key(entry.as_str());
                    self.writers.insert(path, index);
                }
            }
        }
    }

    /// Merges the spec of file `index` into `merged`.
    fn merge_into(
        &mut self,
        index: usize,
        merged: &mut Spec,
        spec: Spec,
        vhost_files: &mut HashMap<String, usize>,
    ) {
        let root = SpecPath::root();
        let Spec {
            version: _,
            lint,
            name,
            rabbitmq,
            defaults,
            policy_priority,
            ladders,
            vhosts,
            users,
            global_parameters,
            environments,
        } = spec;
        let top = |key: &str| format!("the spec's `{key}`");
        if self.setting(index, root.key("lint"), || top("lint")) {
            merged.lint = lint;
        }
        if self.setting(index, root.key("name"), || top("name")) {
            merged.name = name;
        }
        if self.setting(index, root.key("rabbitmq"), || top("rabbitmq")) {
            merged.rabbitmq = rabbitmq;
        }
        if self.setting(index, root.key("defaults"), || top("defaults")) {
            merged.defaults = defaults;
        }
        if self.setting(index, root.key("policy_priority"), || {
            top("policy_priority")
        }) {
            merged.policy_priority = policy_priority;
        }
        self.entries(
            index,
            &root.key("ladders"),
            &mut merged.ladders,
            ladders,
            |n| format!("ladder `{n}`"),
        );
        self.entries(index, &root.key("users"), &mut merged.users, users, |n| {
            format!("user `{n}`")
        });
        self.entries(
            index,
            &root.key("global_parameters"),
            &mut merged.global_parameters,
            global_parameters,
            |n| format!("global parameter `{n}`"),
        );
        // An environment is written whole in one file, as any named entry: what differs
        // in production is read in one place.
        self.entries(
            index,
            &root.key("environments"),
            &mut merged.environments,
            environments,
            |n| format!("environment `{n}`"),
        );
        for (name, vhost) in vhosts {
            vhost_files.entry(name.clone()).or_insert(index);
            let into = merged.vhosts.entry(name.clone()).or_default();
            self.merge_vhost(index, &name, into, vhost);
        }
    }

    /// A setting written in file `index`: claimed (true: take its value), or an error
    /// when an earlier file wrote it too. False when the file does not write it.
    fn setting(&mut self, index: usize, path: SpecPath, what: impl FnOnce() -> String) -> bool {
        self.writes(index, &path) && self.claim(index, path, what)
    }

    /// Adds the named entries of file `index` to `into`, each claimed by name.
    fn entries<T>(
        &mut self,
        index: usize,
        map: &SpecPath,
        into: &mut IndexMap<String, T>,
        from: IndexMap<String, T>,
        what: impl Fn(&str) -> String,
    ) {
        for (name, value) in from {
            if self.claim(index, map.key(name.as_str()), || what(&name)) {
                into.insert(name, value);
            }
        }
    }

    fn merge_vhost(&mut self, index: usize, name: &str, into: &mut Vhost, vhost: Vhost) {
        let at = SpecPath::root().key("vhosts").key(name);
        let Vhost {
            lint,
            description,
            tags,
            default_queue_type,
            limits,
            defaults,
            services,
            exchanges,
            queues,
            bindings,
            policies,
            operator_policies,
            parameters,
        } = vhost;
        let of = |key: &str| format!("`{key}` of vhost `{name}`");
        let mut wrote_setting = false;
        macro_rules! setting {
            ($key:literal, $field:ident) => {
                if self.setting(index, at.key($key), || of($key)) {
                    into.$field = $field;
                    wrote_setting = true;
                }
            };
        }
        setting!("lint", lint);
        setting!("description", description);
        setting!("tags", tags);
        setting!("default_queue_type", default_queue_type);
        setting!("limits", limits);
        setting!("defaults", defaults);
        setting!("bindings", bindings);
        if wrote_setting {
            self.writers.insert(at.clone(), index);
        }
        let in_vhost = |kind: &str, entry: &str| format!("{kind} `{entry}` of vhost `{name}`");
        self.entries(
            index,
            &at.key("services"),
            &mut into.services,
            services,
            |n| in_vhost("service", n),
        );
        self.entries(
            index,
            &at.key("exchanges"),
            &mut into.exchanges,
            exchanges,
            |n| in_vhost("exchange", n),
        );
        self.entries(index, &at.key("queues"), &mut into.queues, queues, |n| {
            in_vhost("queue", n)
        });
        self.entries(
            index,
            &at.key("policies"),
            &mut into.policies,
            policies,
            |n| in_vhost("policy", n),
        );
        self.entries(
            index,
            &at.key("operator_policies"),
            &mut into.operator_policies,
            operator_policies,
            |n| in_vhost("operator policy", n),
        );
        for (component, entries) in parameters {
            let map = at.key("parameters").key(component.as_str());
            let into = into.parameters.entry(component.clone()).or_default();
            self.entries(index, &map, into, entries, |n| {
                in_vhost(&format!("parameter `{component}`"), n)
            });
        }
    }
}

/// The maps of named entries of a vhost, by key, with their names (`parameters`,
/// two levels deep, aside).
fn vhost_maps(vhost: &Vhost) -> [(&'static str, Vec<&str>); 5] {
    fn names<T>(map: &IndexMap<String, T>) -> Vec<&str> {
        map.keys().map(String::as_str).collect()
    }
    [
        ("services", names(&vhost.services)),
        ("exchanges", names(&vhost.exchanges)),
        ("queues", names(&vhost.queues)),
        ("policies", names(&vhost.policies)),
        ("operator_policies", names(&vhost.operator_policies)),
    ]
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::spec::{SpecFile, SpecPath, load_file};

    /// A spec directory of `files` (name, text), loaded.
    fn load(files: &[(&str, &str)]) -> (tempfile::TempDir, Result<SpecFile, Vec<String>>) {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        let loaded =
            load_file(dir.path()).map_err(|found| found.into_iter().map(|d| d.message).collect());
        (dir, loaded)
    }

    const PLATFORM: &str = "version: 1\nname: platform\nladders:\n  std:\n    delays: [30s]\nvhosts:\n  v:\n    limits: { max_queues: 10 }\nglobal_parameters:\n  a: 1\n";
    const TEAM: &str = "version: 1\nvhosts:\n  v:\n    services:\n      s:\n        consumers:\n          c: { retry: { ladder: std } }\n    parameters:\n      shovel:\n        move: {}\nglobal_parameters:\n  b: 2\n";

    fn name_of<'a>(file: &'a SpecFile, path: &[&str]) -> &'a str {
        let written = file.file_of(&SpecPath::from_keys(path.iter().copied()));
        written.path.file_name().unwrap().to_str().unwrap()
    }

    #[test]
    fn named_entries_merge_by_name_and_each_is_found_in_its_file() {
        let (_dir, loaded) = load(&[("platform.yaml", PLATFORM), ("team.yml", TEAM)]);
        let file = loaded.unwrap();
        let spec = &file.spec;
        assert_eq!(spec.name.as_deref(), Some("platform"));
        assert!(spec.vhosts["v"].limits.is_some());
        assert!(spec.vhosts["v"].services.contains_key("s"));
        assert!(spec.vhosts["v"].parameters["shovel"].contains_key("move"));
        assert_eq!(spec.global_parameters.len(), 2);
        let consumer = ["vhosts", "v", "services", "s", "consumers", "c", "retry"];
        assert_eq!(name_of(&file, &consumer), "team.yml");
        assert_eq!(
            name_of(&file, &["ladders", "std", "delays"]),
            "platform.yaml"
        );
        // A vhost is found in the file that writes its settings.
        assert_eq!(name_of(&file, &["vhosts", "v"]), "platform.yaml");
        assert_eq!(name_of(&file, &["global_parameters", "b"]), "team.yml");
        let place = file
            .locate(&SpecPath::from_keys(consumer.iter().copied()))
            .unwrap();
        assert!(place.file.ends_with("team.yml"));
        assert_eq!((place.location.line, place.location.column), (7, 16));
    }

    #[test]
    fn the_order_of_the_files_does_not_change_the_spec() {
        let (_a, first) = load(&[("a.yaml", PLATFORM), ("b.yaml", TEAM)]);
        let (_b, second) = load(&[("a.yaml", TEAM), ("b.yaml", PLATFORM)]);
        let json = |file: SpecFile| {
            let mut value = serde_json::to_value(&file.spec).unwrap();
            value.sort_all_objects();
            value
        };
        assert_eq!(json(first.unwrap()), json(second.unwrap()));
    }

    #[test]
    fn a_value_of_one_file_written_in_two_is_an_error() {
        let (dir, loaded) = load(&[
            ("a.yaml", PLATFORM),
            ("b.yaml", "version: 1\ndefaults: { queue_type: classic }\n"),
            (
                "c.yaml",
                "version: 1\ndefaults: {}\nladders:\n  std: { delays: [1s] }\nvhosts:\n  v:\n    tags: [x]\n",
            ),
        ]);
        let errors = loaded.unwrap_err();
        let at = |name: &str, line: usize, column: usize| {
            format!(
                "{}:{line}:{column}",
                Path::new(dir.path()).join(name).display()
            )
        };
        assert_eq!(
            errors,
            [
                format!(
                    "the spec's `defaults` is defined in {} and in {}",
                    at("b.yaml", 2, 1),
                    at("c.yaml", 2, 1)
                ),
                format!(
                    "ladder `std` is defined in {} and in {}",
                    at("a.yaml", 4, 3),
                    at("c.yaml", 4, 3)
                ),
            ]
        );
    }

    #[test]
    fn hidden_files_subdirectories_and_other_files_are_not_read() {
        let (dir, loaded) = load(&[
            ("spec.yaml", PLATFORM),
            (".draft.yaml", "version: 2\n"),
            ("notes.txt", "not yaml"),
        ]);
        std::fs::create_dir(dir.path().join("old")).unwrap();
        std::fs::write(dir.path().join("old/spec.yaml"), PLATFORM).unwrap();
        assert_eq!(loaded.unwrap().files.len(), 1);
        assert_eq!(load_file(dir.path()).unwrap().files.len(), 1);
    }

    #[test]
    fn a_directory_without_a_name_is_named_after_itself() {
        let (dir, loaded) = load(&[("team.yaml", TEAM)]);
        let file = loaded.unwrap();
        assert_eq!(file.spec.name, None);
        let own = dir.path().file_name().unwrap().to_str().unwrap();
        assert_eq!(file.default_name().as_deref(), Some(own));
        // Given as `.` (or with a trailing `/`), still the directory's own name.
        let dotted = load_file(&dir.path().join(".")).unwrap();
        assert_eq!(dotted.default_name().as_deref(), Some(own));
    }
}
