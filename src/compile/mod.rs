//! Spec → RabbitMQ definitions.
//!
//! The compiler walks vhosts, services and consumers, emits every exchange, queue,
//! binding, policy, user and permission the spec implies, and remembers for each object
//! the spec path it came from (so later stages can point back at the YAML). It fails
//! with every problem it found, each with a path and, once resolved, a line and column.

mod consumer;
pub mod contract;
pub mod naming;
mod origins;
pub mod output_checks;
pub mod permissions;
mod plain;
pub mod policies;
mod resolve;
mod retry;
pub mod secrets;
mod services;
mod users;

use std::sync::Arc;

use serde_json::Value;

use crate::model::password::Passwords;
use crate::model::version::TargetVersion;
use crate::model::{
    Arguments, BROKER_ID_PARAMETER, Binding, Definitions, Exchange, ObjectId, ObjectKind, Queue,
    binding_id,
};
use crate::spec::diagnostic::Diagnostic;
use crate::spec::{QueueType, SpecFile, SpecPath};

pub use contract::Contract;
pub use origins::Origins;
pub use resolve::native::wait as native_wait;
pub use secrets::Secrets;

/// How to compile.
#[derive(Debug, Clone)]
pub struct Options {
    /// The broker version the output must be valid for.
    pub target: TargetVersion,
    /// The passwords and environment values the spec refers to, read beforehand by
    /// [`secrets::read`]. `None` compiles without them: users get an empty hash and
    /// `{ env: … }` values an empty string (`validate` and `lint` need no secrets).
    pub secrets: Option<Secrets>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            target: TargetVersion::DEFAULT,
            secrets: None,
        }
    }
}

impl Options {
    /// Options for `target` with the spec's secrets read from the environment and
    /// password files.
    pub fn reading_secrets(file: &SpecFile, target: TargetVersion) -> Options {
        Options {
            target,
            secrets: Some(secrets::read(file)),
        }
    }

    /// Options that read the spec's secrets first, a password that cannot be read
    /// being what `missing` says.
    pub fn reading_secrets_with(
        file: &SpecFile,
        target: TargetVersion,
        missing: secrets::MissingPassword,
    ) -> Options {
        Options {
            target,
            secrets: Some(secrets::read_with(file, missing)),
        }
    }
}

/// What the compiler produces.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// The desired broker state.
    pub definitions: Definitions,
    /// For every object, the spec path that produced it.
    pub origins: Origins,
    /// What consumers must do on failure, per consumer.
    pub contract: Contract,
    /// Findings that do not stop compilation.
    pub warnings: Vec<Diagnostic>,
    /// The users' clear passwords, kept in memory only to recognise an unchanged
    /// password on the broker. Never printed or written.
    pub passwords: Passwords,
    /// The permissions generated from the topology (consumers' `user`, services'
    /// `publishers`) before the written ones were added: what lint compares the written
    /// ones with.
    pub generated_permissions: Vec<permissions::GeneratedPermission>,
}

/// Compiles a loaded spec. On failure returns every error found (and the warnings),
/// each with its location resolved. Pure: the secrets come in `options`.
pub fn compile(file: &SpecFile, options: &Options) -> Result<Compiled, Vec<Diagnostic>> {
    let mut emitter = Emitter::new(options.clone());
    if let Some(secrets) = &options.secrets {
        emitter.diagnostics.extend(secrets.problems.iter().cloned());
    }
    let spec = &file.spec;
    if spec.version != 1 {
        emitter.diagnostics.push(
            Diagnostic::error(
                "unsupported-version",
                format!("spec version {} is not supported", spec.version),
            )
            .at(SpecPath::root().key("version"))
            .help("this warren reads `version: 1`"),
        );
    } else {
        services::emit_all(spec, &mut emitter);
        plain::emit_all(spec, &mut emitter);
        users::emit_all(spec, &mut emitter);
        permissions::emit_all(spec, &mut emitter);
        emit_global_parameters(spec, &mut emitter);
        output_checks::check_references(&mut emitter);
        output_checks::check_addressable(&mut emitter);
        output_checks::check_permission_lengths(&mut emitter);
        policies::emit_all(spec, file, &mut emitter);
    }
    let Emitter {
        mut definitions,
        origins,
        contract,
        diagnostics,
        passwords,
        generated_permissions,
        ..
    } = emitter;
    let diagnostics = resolve_locations(file, diagnostics);
    if diagnostics.iter().any(Diagnostic::is_error) {
        return Err(diagnostics);
    }
    // The lists keep their spare capacity: it was never written, so it costs address
    // space but no memory, while shrinking a list copies it into a new allocation.
    definitions.sort();
    Ok(Compiled {
        definitions,
        origins,
        contract,
        warnings: diagnostics,
        passwords,
        generated_permissions,
    })
}

fn emit_global_parameters(spec: &crate::spec::Spec, out: &mut Emitter) {
    for (name, value) in &spec.global_parameters {
        let path = SpecPath::root().key("global_parameters").key(name);
        if name == BROKER_ID_PARAMETER {
            out.error(
                "invalid-name",
                format!("global parameter `{name}` is the broker's own identity: a spec cannot set it (copied to another broker, it would make two brokers look like one)"),
                path,
            )
            .hint("remove it");
            continue;
        }
        let id = ObjectId::global(ObjectKind::GlobalParameter, name);
        if out.claim(id, &path) {
            out.definitions
                .global_parameters
                .push(crate::model::GlobalParameter {
                    name: name.clone(),
                    value: value.clone(),
                });
        }
    }
}

/// Fills in file positions (the file that wrote the value, and its line) from the
/// spec paths, and orders findings by file and position.
pub fn resolve_locations(file: &SpecFile, mut diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
    for diagnostic in &mut diagnostics {
        file.place_diagnostic(diagnostic);
    }
    diagnostics
        .sort_by(|a, b| (&a.file, a.location, a.severity).cmp(&(&b.file, b.location, b.severity)));
    diagnostics.dedup();
    crate::spec::diagnostic::merge_affected(diagnostics)
}

/// A queue the compiler made, with what the policy stage needs to know about it.
#[derive(Debug, Clone)]
pub(crate) struct QueueInfo {
    pub queue_type: QueueType,
    /// Settings a generated policy must give this queue, by policy group. Shared: every
    /// delay queue of one ladder tier needs the same one.
    pub needs: Vec<Arc<PolicyNeed>>,
}

/// A setting that must reach a queue through a generated policy.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PolicyNeed {
    /// Group name: queues with the same groups share one policy.
    pub group: String,
    /// The name ending by which the group's policy selects its queues
    /// ([`naming::tier_ending`]); `None` when the policy lists its queues by name.
    pub ending: Option<String>,
    /// The keys this group sets.
    pub definition: Arguments,
    /// Where the setting was written.
    pub path: SpecPath,
}

/// Collects the output while the compiler walks the spec.
pub(crate) struct Emitter {
    pub options: Options,
    pub definitions: Definitions,
    pub origins: Origins,
    pub contract: Contract,
    pub diagnostics: Vec<Diagnostic>,
    /// What the policy stage needs to know of each queue, in the order of
    /// `definitions.queues` (which is sorted only at the end).
    pub queue_infos: Vec<QueueInfo>,
    /// The need of each tier of each ladder, by ladder origin ([`retry::tier_need`]).
    pub tier_needs: rustc_hash::FxHashMap<String, Vec<Option<Arc<PolicyNeed>>>>,
    /// Clear passwords of the users compiled with one.
    pub passwords: Passwords,
    /// The services' publishers, for [`permissions::emit_all`].
    pub publishers: Vec<permissions::PublisherUse>,
    /// What [`permissions::emit_all`] generated.
    pub generated_permissions: Vec<permissions::GeneratedPermission>,
    /// The reserved names reported, by vhost ([`Emitter::claim`]).
    reserved_reported: Vec<(Option<String>, String)>,
}

impl Emitter {
    fn new(options: Options) -> Self {
        Emitter {
            options,
            definitions: Definitions::default(),
            origins: Origins::default(),
            contract: Contract::default(),
            diagnostics: Vec::new(),
            queue_infos: Vec::new(),
            tier_needs: Default::default(),
            passwords: Default::default(),
            publishers: Vec::new(),
            generated_permissions: Vec::new(),
            reserved_reported: Vec::new(),
        }
    }

    /// Records the origin of an object; reports a clash when two parts of the spec
    /// produce the same object. Returns false on a clash.
    ///
    /// A name in warren's reserved namespace ([`crate::model::reserved`]) is an error
    /// here, where every object the spec names passes; the policies warren generates
    /// are claimed with [`Emitter::claim_generated`].
    pub fn claim(&mut self, id: ObjectId, path: &SpecPath) -> bool {
        if let Some(collision) = crate::model::reserved::collision(&id) {
            // The object is still claimed, so that what refers to it (a binding, a
            // permission) is not reported missing as well.
            self.refuse_reserved(&id, &collision, path);
        }
        self.claim_generated(id, path)
    }

    /// Reports a reserved name once: the names the compiler derives from it (a work
    /// queue's `.retry` exchange, tiers and parking queue) are not reported again.
    fn refuse_reserved(
        &mut self,
        id: &ObjectId,
        collision: &crate::model::reserved::Collision,
        path: &SpecPath,
    ) {
        let derived = self
            .reserved_reported
            .iter()
            .any(|(vhost, stem)| *vhost == id.vhost && id.name.starts_with(stem.as_str()));
        if derived {
            return;
        }
        self.reserved_reported
            .push((id.vhost.clone(), id.name.clone()));
        self.error("reserved-name", collision.message(), path.clone())
            .hint(collision.fix());
    }

    /// [`Emitter::claim`] for a name warren generates in its own namespace (its
    /// policies), which no reserved-name check applies to.
    pub fn claim_generated(&mut self, id: ObjectId, path: &SpecPath) -> bool {
        let Err((id, first)) = self.origins.claim(id, path) else {
            return true;
        };
        self.diagnostics.push(
            Diagnostic::error("duplicate-name", format!("{id} is defined twice"))
                .at(path.clone())
                .help(format!(
                    "it is already defined at `{first}`: rename one of them"
                )),
        );
        false
    }

    /// Adds an exchange unless its name is taken.
    pub fn exchange(&mut self, exchange: Exchange, path: &SpecPath) {
        output_checks::check_name(self, "exchange", &exchange.name, path);
        let id = ObjectId::in_vhost(ObjectKind::Exchange, &exchange.vhost, &exchange.name);
        if self.claim(id, path) {
            self.definitions.exchanges.push(exchange);
        }
    }

    /// Adds a queue unless its name is taken.
    pub fn queue(
        &mut self,
        queue: Queue,
        queue_type: QueueType,
        needs: Vec<Arc<PolicyNeed>>,
        path: &SpecPath,
    ) {
        output_checks::check_name(self, "queue", &queue.name, path);
        let id = ObjectId::in_vhost(ObjectKind::Queue, &queue.vhost, &queue.name);
        if self.claim(id, path) {
            self.queue_infos.push(QueueInfo { queue_type, needs });
            self.definitions.queues.push(queue);
        }
    }

    /// Adds a binding; two bindings that differ only by arguments are different.
    pub fn binding(&mut self, binding: Binding, path: &SpecPath) {
        if self.claim(binding_id(&binding), path) {
            self.definitions.bindings.push(binding);
        }
    }

    /// Puts the queues, and their infos with them, in the order of
    /// [`Definitions::sort`] (vhost, then name): the order of the generated policies'
    /// queue lists. The final sort then finds the queues in order already, so the
    /// 50,000 queues of 10,000 work queues are sorted once, not twice.
    pub fn sort_queues(&mut self) {
        let queues = &mut self.definitions.queues;
        let mut order: Vec<usize> = (0..queues.len()).collect();
        order.sort_unstable_by(|&a, &b| {
            let (a, b) = (&queues[a], &queues[b]);
            (&a.vhost, &a.name).cmp(&(&b.vhost, &b.name))
        });
        // Position i takes the queue at order[i]: follow each cycle of the permutation,
        // swapping, and mark the positions done.
        const DONE: usize = usize::MAX;
        for start in 0..order.len() {
            let mut at = start;
            while order[at] != DONE {
                let from = order[at];
                order[at] = DONE;
                if from == start {
                    break;
                }
                queues.swap(at, from);
                self.queue_infos.swap(at, from);
                at = from;
            }
        }
    }

    /// Reports an error at `path`.
    pub fn error(
        &mut self,
        code: &'static str,
        message: impl Into<String>,
        path: SpecPath,
    ) -> &mut Diagnostic {
        self.diagnostics
            .push(Diagnostic::error(code, message).at(path));
        self.diagnostics.last_mut().expect("just pushed")
    }

    /// Reports a warning at `path`.
    pub fn warn(
        &mut self,
        code: &'static str,
        message: impl Into<String>,
        path: SpecPath,
    ) -> &mut Diagnostic {
        self.diagnostics
            .push(Diagnostic::warning(code, message).at(path));
        self.diagnostics.last_mut().expect("just pushed")
    }
}

/// A durable, non-auto-delete queue: every queue warren generates.
pub(crate) fn durable_queue(vhost: &str, name: &str, arguments: Arguments) -> Queue {
    Queue {
        name: name.to_string(),
        vhost: vhost.to_string(),
        durable: true,
        auto_delete: false,
        arguments,
        extra: Default::default(),
    }
}

/// A binding from an exchange to a queue.
pub(crate) fn queue_binding(
    vhost: &str,
    source: &str,
    queue: &str,
    routing_key: &str,
    arguments: Arguments,
) -> Binding {
    Binding {
        source: source.to_string(),
        vhost: vhost.to_string(),
        destination: queue.to_string(),
        destination_type: "queue".into(),
        routing_key: routing_key.to_string(),
        arguments,
        extra: Default::default(),
    }
}

/// Builds queue arguments with an explicit `x-queue-type`.
pub(crate) fn queue_arguments(queue_type: QueueType) -> Arguments {
    let mut arguments = Arguments::new();
    arguments.insert("x-queue-type".into(), Value::from(queue_type.as_str()));
    arguments
}

#[cfg(test)]
mod tests;
